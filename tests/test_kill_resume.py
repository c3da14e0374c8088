"""kill -9 and rerun: `python -m pipeline run` as a real subprocess, SIGKILLed (with all its processes,
Ray's included) at points in every pass, rerun each time; the run that finally completes must give the
same bytes in docs/, rejects/ and tokens/ as an uninterrupted run, and at no kill may a file under its
final name be partial. The reference runs in the test's process with other batch sizes and dedup shards:
determinism is part of the check."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from helpers import ROOT

INPUTS = sorted(str(p) for p in (ROOT / "tests" / "fixtures" / "warc").iterdir())
FORMATS = "packing.formats=[parquet, megatron, mds, nanotron]"  # the exports are killed and rerun too
SETTINGS = ["ray.num_cpus=2", "packing.seq_len=32", "packing.sequences_per_shard=40", "dedup.shards=3", FORMATS]
FINAL = ("docs", "rejects", "tokens")

# (log line that starts the countdown, seconds after it). None: from the process start. The log lines are
# the belt's own ("crawlbelt: filter pass: ..."), so each point lands in a known pass; the random part
# (seeded, printed on failure) moves it around inside that pass.
_random = random.Random(7)
KILL_POINTS = [
    (None, 4.0),  # starting Ray / first reads
    (None, 7.0 + _random.uniform(0, 2)),  # inside the filter pass
    ("filter pass:", _random.uniform(0.0, 1.5)),  # dedup starts, or inside dedup
    ("dedup pass:", _random.uniform(0.0, 0.8)),  # finalize writing docs/ and rejects/ parts
    ("finalize:", 0.0),  # tokenizer training, tokenizer.json written
    ("tokenizer:", 0.0),  # encoding
    ("encode:", 0.0),  # mixture, packing, token shards written
    ("mixture:", _random.uniform(0.0, 0.3)),  # writing token shards
    ("pack:", 0.0),  # the exports (tokens/megatron/, mds/, nanotron/), manifest and report written
]


# The uninterrupted reference runs in this process (on the tests' Ray) with other batch sizes and dedup shards,
# so the comparison also shows that the bytes depend on none of them.
REFERENCE_SETTINGS = [
    "packing.seq_len=32",
    "packing.sequences_per_shard=40",
    "dedup.shards=5",
    "read.batch_size=7",
    "tokenizer.batch_size=5",
    FORMATS,
]


def command(out: Path, settings: list[str] = SETTINGS) -> list[str]:
    sets = [arg for s in settings for arg in ("--set", s)]
    return [
        sys.executable,
        "-m",
        "pipeline",
        "run",
        str(ROOT / "configs" / "local.yaml"),
        "--input",
        *INPUTS,
        "--output",
        str(out),
        *sets,
    ]


def run_to_end(out: Path) -> None:
    result = subprocess.run(command(out), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]


def run_and_kill(out: Path, marker: str | None, delay: float, settings: list[str] = SETTINGS) -> bool:
    """Start a run, SIGKILL its whole process group `delay` s after `marker` appears in its log (or
    after the start); True if it was killed, False if it finished first."""
    process = subprocess.Popen(
        command(out, settings),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    seen = threading.Event() if marker else None
    log: list[str] = []

    def follow():
        for line in process.stderr:
            log.append(line)
            if seen is not None and marker in line:
                seen.set()

    threading.Thread(target=follow, daemon=True).start()
    if seen is not None:
        while not seen.wait(0.05):
            if process.poll() is not None:
                break
    if process.poll() is None:
        time.sleep(delay)
    killed = process.poll() is None
    if killed:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    _wait_for_group_to_die(process.pid)
    assert killed or process.returncode == 0, "".join(log)[-3000:]
    return killed


def _wait_for_group_to_die(pgid: int) -> None:
    for _ in range(200):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def assert_no_partial_files(out: Path) -> None:
    """Whatever is visible under a final name is whole."""
    for name in FINAL:
        for path in (out / name).rglob("*.parquet"):
            pq.read_table(path)  # raises on a truncated file
        for path in (out / name).rglob("*.json"):
            json.loads(path.read_text())
        # hidden: temporary names; the exports' files are written under a temporary name and renamed too
        visible = [p for p in (out / name).rglob("*") if p.is_file() and not p.name.startswith(".")]
        assert all(
            p.suffix in (".parquet", ".json", ".bin", ".idx", ".mds", ".ds", ".index", ".metadata") for p in visible
        ), visible
    if (out / "manifest.json").exists():
        json.loads((out / "manifest.json").read_text())
    if (out / "report.html").exists():
        assert (out / "report.html").read_text().rstrip().endswith("</html>")


def final_files(out: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(out)): p.read_bytes()
        for name in FINAL
        for p in sorted((out / name).rglob("*"))
        if p.is_file()
    }


@pytest.mark.slow
def test_killed_runs_rerun_to_the_same_bytes(tmp_path, run_here):
    reference = tmp_path / "reference"
    run_here(ROOT / "configs" / "local.yaml", reference, REFERENCE_SETTINGS, inputs=INPUTS)
    expected = final_files(reference)
    assert any(name.startswith("tokens/part-") for name in expected) and any(n.startswith("docs/") for n in expected)
    assert {"tokens/megatron/tokens.bin", "tokens/mds/index.json", "tokens/nanotron/tokens.ds"} <= set(expected)

    out = tmp_path / "killed"
    killed = []
    for marker, delay in KILL_POINTS:
        if run_and_kill(out, marker, delay):
            killed.append((marker, round(delay, 2)))
        assert_no_partial_files(out)
    # every point but perhaps the very last (the run may finish within it) must have hit
    assert len(killed) >= len(KILL_POINTS) - 1, killed

    run_to_end(out)
    assert final_files(out) == expected, killed
    assert not (out / "_work").exists()
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in reference.iterdir())
    counts = json.loads((out / "manifest.json").read_text())["counts"]
    assert counts == json.loads((reference / "manifest.json").read_text())["counts"]
