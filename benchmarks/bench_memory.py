"""Peak memory of the streaming filter pass at 1x and Nx the input (the WARC list read N times).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_memory.py                 # 1x and 10x the real-page WARCs
    PYTHONPATH=. .venv/bin/python benchmarks/bench_memory.py --times 10 --method resiliparse

Each size runs `benchmarks/bench_filter.py --no-datatrove --methods METHOD --repeat N` in a fresh process (ru_maxrss only ever
grows, so the two sizes cannot share one) and reads its peak RSS. A pass that streams batch by batch holds
the same few batches whatever the input size, so the ratio should stay near 1 (target: at most 1.2).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(times: int, warcs: list[str], method: str, overrides: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "figures.json"
        command = [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_filter.py"),
            *warcs,
            "--no-datatrove",
            "--methods",
            method,
            "--repeat",
            str(times),
            "--json",
            str(out),
        ]
        for assignment in overrides:
            command += ["--set", assignment]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
        return json.loads(out.read_text())["ours"][0]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("warcs", nargs="*", help="WARC files or globs (default: bench_filter.py's)")
    parser.add_argument("--times", type=int, default=10, help="the larger input, in copies of the WARC list")
    parser.add_argument("--method", default="trafilatura", help="the extract.method to run (default trafilatura)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args(argv)

    figures = {}
    for times in (1, args.times):
        ours = run(times, args.warcs, args.method, args.overrides)
        figures[times] = ours
        print(
            f"{times:>3}x: {ours['records']:,} records, {ours['documents']:,} documents, "
            f"{ours['cpu_s']:.1f} CPU-s, peak RSS {ours['peak_rss_mib']:.0f} MiB",
            flush=True,
        )
    ratio = figures[args.times]["peak_rss_mib"] / figures[1]["peak_rss_mib"]
    print(f"peak RSS {args.times}x / 1x: {ratio:.3f} (load average {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"runs": figures, "ratio": ratio, "load_average": os.getloadavg()}, indent=1)
        )


if __name__ == "__main__":
    main()
