"""`python -m pipeline status OUT`: where a run stands. A run in progress (or one that failed or was killed) has
OUT/_work/progress.json, rewritten every few seconds (pipeline/progress.py); a finished run's _work/ is removed
at its commit, so its counts come from OUT/manifest.json."""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path

from pipeline.progress import PROGRESS_FILE, WRITE_EVERY_S, clock_time, line

STALE_S = 12 * WRITE_EVERY_S  # a run elsewhere whose progress.json is older than this may be gone


def status_command(out_dir: str, as_json: bool) -> int:
    out = Path(out_dir)
    progress_file, manifest_file = out / "_work" / PROGRESS_FILE, out / "manifest.json"
    try:
        if progress_file.is_file():
            snapshot = json.loads(progress_file.read_text())
            state = run_state(snapshot, time.time())
            print(
                json.dumps({"from": str(progress_file), "run": state, **snapshot}, indent=2)
                if as_json
                else "\n".join(progress_lines(snapshot, state))
            )
            return 0
        if manifest_file.is_file():
            manifest = json.loads(manifest_file.read_text())
            print(
                json.dumps({"from": str(manifest_file), "run": "finished", **finished(manifest)}, indent=2)
                if as_json
                else "\n".join(manifest_lines(manifest))
            )
            return 0
    except (OSError, ValueError, KeyError) as error:
        print(f"status: {out}: cannot read its progress or manifest ({error})", file=sys.stderr)
        return 2
    print(f"status: {out}: no run there (neither _work/{PROGRESS_FILE} nor manifest.json)", file=sys.stderr)
    return 2


def run_state(snapshot: dict, now: float) -> str:
    """running, complete, failed, or stopped: its process is gone (killed) or has not written for long."""
    if snapshot["state"] != "running":
        return snapshot["state"]
    if snapshot["host"] == socket.gethostname():
        return "running" if _alive(snapshot["pid"]) else "stopped"
    return "running" if now - snapshot["updated"] < STALE_S else "stopped"


def _alive(pid: int) -> bool:
    from pipeline.passes.filtering import _alive as alive  # a process of this machine, a zombie counting as gone

    return alive(pid)


def progress_lines(snapshot: dict, state: str) -> list[str]:
    said = {
        "running": "run in progress",
        "stopped": "run stopped (its process is gone, or no update for long): rerun it to resume",
        "failed": "run failed (its log: _work/run.log)",
        "complete": "run complete",
    }[state]
    ago = time.time() - snapshot["updated"]
    lines = [
        f"{said}: pid {snapshot['pid']} on {snapshot['host']}, {clock_time(snapshot['elapsed_s'])} since it started, "
        f"updated {ago:.0f} s ago"
    ]
    shown = line(snapshot)
    lines.append(f"pass {shown}" if shown else "pass: none under way")
    return lines + count_lines(snapshot["counts"], snapshot["cpu_seconds"], snapshot["errors"])


def count_lines(counts: dict, seconds: dict, errors: dict | None = None) -> list[str]:
    lines = [
        f"records read: {counts['records_read']:,}"
        + (f" ({counts['bytes_read'] / 1e6:,.1f} MB)" if counts.get("bytes_read") else "")
        + f", documents: {counts['documents']:,}, kept: {counts['kept']:,}",
        "rejected by stage: " + (", ".join(f"{s} {n:,}" for s, n in counts["rejected"].items()) or "none"),
        "rejected by reason: " + (", ".join(f"{r} {n:,}" for r, n in counts["rejected_by_reason"].items()) or "none"),
        "seconds per stage: " + (", ".join(f"{s} {v:,.1f}" for s, v in seconds.items()) or "none yet"),
    ]
    if errors is not None:
        lines.append("warnings and errors logged: " + (", ".join(f"{k} {n}" for k, n in errors.items()) or "none"))
    return lines


def finished(manifest: dict) -> dict:
    """A finished run's figures from its manifest."""
    seconds = {name: row["seconds"] for name, row in manifest["stages"].items() if row.get("seconds") is not None}
    return {
        "complete": manifest["complete"],
        "wall_seconds": manifest["wall_seconds"],
        "counts": manifest["counts"],
        "seconds": seconds,
    }


def manifest_lines(manifest: dict) -> list[str]:
    figures = finished(manifest)
    head = "run complete" if figures["complete"] else "run not complete"
    return [
        f"{head} in {figures['wall_seconds']:,.1f} s (from manifest.json: a finished run's _work/, with its "
        "progress.json, is removed)"
    ] + count_lines(figures["counts"], figures["seconds"])
