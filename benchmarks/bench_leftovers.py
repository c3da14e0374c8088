"""What a run stuck in C code leaves behind once stopped, and what the watchdog that ends it costs.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_leftovers.py [--code DIR] [--engines ray spark] [--limit 60]

For each engine and each of SIGINT and SIGTERM (to the run's process group, as a terminal or `timeout` sends
them) and SIGKILL (to the driver alone), it starts `python -m pipeline run` of the crawlbelt in --code (default:
this one; give a `git archive` of main for the figures before) on two JSONL files through a stage stuck in C
code that ignores signals, in its worker and in a process it started (tests/test_no_leftovers.py's `Stuck`),
sends the signal, and prints how long until none of the run's processes was left, or how many were left after
--limit seconds (then it kills them). Then the watchdog's own cost (pipeline/engines/reaper.py): starting it, and a
look at the run's processes, which it takes every second while a run runs.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from test_no_leftovers import alive, kill_all, run_processes, start_run, wait_for  # noqa: E402

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)


def leftovers(engine: str, sent: signal.Signals, code: Path, limit_s: float) -> str:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        process, token = start_run(tmp, engine, "Stuck", code)
        processes: dict[int, int] = {}
        try:
            marks = tmp / "marks"
            wait_for(lambda: (marks / "helper").exists() and any(marks.glob("worker-*")), 300, process, tmp / "stderr")
            time.sleep(1)
            processes = run_processes(process.pid, token)
            started = time.monotonic()
            if sent == signal.SIGKILL:
                process.kill()
            else:
                os.killpg(process.pid, sent)
            while (left := alive(processes)) and time.monotonic() - started < limit_s:
                time.sleep(0.1)
            if left:
                return f"{len(left)} of {len(processes)} left after {limit_s:g} s: " + ", ".join(
                    sorted(
                        {command.split()[0] if "python" not in command else command[:40] for command in left.values()}
                    )
                )
            return f"none of {len(processes)} left after {time.monotonic() - started:.1f} s"
        finally:
            process.kill()
            kill_all(processes)


def watchdog_cost(rounds: int = 20) -> str:
    from pipeline.engines import reaper

    before = time.perf_counter()
    reaper.start()
    started_s = time.perf_counter() - before
    before = time.process_time()
    reaper.run_processes("none", os.getpid(), {})
    first_s = time.process_time() - before
    before = time.process_time()
    for _ in range(rounds):
        reaper.run_processes("none", os.getpid(), {})
    look_s = (time.process_time() - before) / rounds
    count = len(reaper.processes())
    return (
        f"watchdog: started in {started_s * 1000:.1f} ms (the driver does not wait for it); a look at the run's "
        f"processes with {count} processes on the machine: {first_s * 1000:.1f} ms of CPU the first time (every "
        f"environment read), {look_s * 1000:.1f} ms after; once a second: {look_s / reaper.WATCH_S * 100:.2f}% "
        "of a core"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--code", type=Path, default=ROOT, help="the crawlbelt checkout whose runs are stopped")
    parser.add_argument("--engines", nargs="+", default=["ray", "spark"])
    parser.add_argument("--limit", type=float, default=60.0)
    args = parser.parse_args()
    for engine in args.engines:
        for sent in SIGNALS:
            print(f"{engine} {sent.name}: {leftovers(engine, sent, args.code.resolve(), args.limit)}", flush=True)
    if args.code.resolve() == ROOT:
        print(watchdog_cost())


if __name__ == "__main__":
    main()
