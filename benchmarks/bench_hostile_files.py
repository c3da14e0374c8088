#!/usr/bin/env python3
"""Peak memory and time of crawlbelt's commands on hostile files, one case at a time, on a chosen tree.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_hostile_files.py [--tree DIR] [--only NAME ...] [--cap-mb 6000]
        [--timeout-s 120] [--engines ray,spark] [--json FILE]

The cases are the `CASES` of every `benchmarks/hostile/*.py` (name -> make(folder) -> the arguments after
`python -m pipeline`), always this tree's; the code measured is `--tree`'s (default: this tree), run as
`python -m pipeline ARGS` in that folder with PYTHONPATH pointing at it, stdin closed. To measure the code before
a change: `git archive COMMIT | tar -x -C /tmp/before` and `--tree /tmp/before`. A `run` case runs once per
engine (`--set engine=spark` added for Spark).

Figures: the peak of the summed resident memory of the command's whole process tree (Ray's or Spark's own
processes included: an embedded Ray alone is about 0.4-0.6 GB here), polled every 50 ms, and the wall seconds.
A tree past `--cap-mb`, or a command past `--timeout-s`, is killed and reported as such: the "before" figures of
a case that grows without bound are the cap, not its end.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


HERE = Path(__file__).resolve().parent
MB = 1 << 20


def load_cases() -> dict[str, object]:
    cases: dict[str, object] = {}
    for path in sorted((HERE / "hostile").glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"hostile_{path.stem}", path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for name, make in module.CASES.items():
            cases[f"{path.stem}/{name}"] = make
    return cases


PAGE = os.sysconf("SC_PAGE_SIZE")


def session_rss(session: int) -> int:
    """The summed resident bytes of every process of a session (the command's, and all it started)."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (name) "
            if int(fields[3]) == session:  # field 6 of stat: the session id
                total += int(Path(entry.path, "statm").read_text().split()[1]) * PAGE
        except (OSError, ValueError):  # ended between the listing and the reading
            pass
    return total


def measure(argv: list[str], tree: Path, cap_mb: int, timeout_s: float) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONUNBUFFERED": "1"}
    start = time.monotonic()
    with tempfile.TemporaryFile() as log:
        child = subprocess.Popen(
            [sys.executable, "-m", "pipeline", *argv],
            cwd=tree,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own session and group: measured and killed with Ray's and Spark's processes
        )
        peak, outcome = 0, None
        while child.poll() is None:
            peak = max(peak, session_rss(child.pid))
            if peak > cap_mb * MB:
                outcome = f"killed at {cap_mb} MB"
            elif time.monotonic() - start > timeout_s:
                outcome = f"killed at {timeout_s:.0f} s"
            if outcome:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
                break
            time.sleep(0.05)
        seconds = time.monotonic() - start
        try:  # what a command leaves behind (Ray's raylet, a JVM) is ended with it
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        log.seek(0)
        lines = [line for line in log.read().decode("utf-8", "replace").splitlines() if line.strip()]
    return {
        "peak_mb": round(peak / MB),
        "seconds": round(seconds, 1),
        "exit": child.returncode if outcome is None else None,
        "outcome": outcome or f"exit {child.returncode}",
        "last_line": lines[-1][:160] if lines else "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, default=HERE.parent, help="the crawlbelt tree whose code runs")
    parser.add_argument("--only", nargs="*", help="case names (AREA/NAME) or areas to run")
    parser.add_argument("--cap-mb", type=int, default=6000)
    parser.add_argument("--timeout-s", type=float, default=120)
    parser.add_argument("--engines", default="ray,spark")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    cases = load_cases()
    if args.only:
        cases = {n: m for n, m in cases.items() if n in args.only or n.split("/")[0] in args.only}
    tree = args.tree.resolve()
    results = []
    print(f"tree {tree}; cap {args.cap_mb} MB, {args.timeout_s:.0f} s")
    print(f"{'case':44} {'engine':6} {'peak MB':>8} {'s':>7}  outcome / last line")
    for name, make in cases.items():
        with tempfile.TemporaryDirectory(prefix="hostile-") as folder:
            argv = make(Path(folder))  # type: ignore[operator]
            engines = args.engines.split(",") if argv[0] == "run" else ["-"]
            for engine in engines:
                run_argv = [*argv, "--set", "engine=spark"] if engine == "spark" else argv
                figures = measure(run_argv, tree, args.cap_mb, args.timeout_s)
                results.append({"case": name, "engine": engine, **figures})
                print(
                    f"{name:44} {engine:6} {figures['peak_mb']:8} {figures['seconds']:7.1f}  "
                    f"{figures['outcome']}: {figures['last_line']}",
                    flush=True,
                )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
