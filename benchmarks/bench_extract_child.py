"""The cost of extracting in the stage's child process rather than in this one, on real pages.

    python benchmarks/bench_extract_child.py [--methods trafilatura,resiliparse] [--limit N] [--rounds R]

Pages: ../shared/realhtml, read and decoded as benchmarks/bench_extract.py does (`--limit` pages per dataset).
For each method, the wall time of every page through
- in-process: Extract.extract_decoded in this process (SIGALRM only: the stage before its child), and
- child: the stage's own path, Extract._extract_all on batches of `read.batch_size` (64) pages, sent to the
  extraction child and read back one by one with a deadline,
each after a first page outside the timing (the child started, trafilatura's first call made). Both run in
turn `--rounds` times; the table gives the best round of each (the machine is shared) and their ratio, in
wall time and in CPU time (for the child path: this process's and the child's, from /proc, together).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from extract_pages import DEFAULT_DIR, load_pages  # noqa: E402
from stages import extract  # noqa: E402
from stages.extract import Extract  # noqa: E402

BATCH = 64
FIRST_PAGE = "<html><body><article><p>A first page, outside the timing.</p></article></body></html>"


def children_cpu() -> float:
    """CPU seconds of the extraction children alive now (Linux)."""
    total = 0
    for child in extract._children.values():
        with open(f"/proc/{child.process.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def timed(run, stage: Extract, pages: list[str]) -> tuple[float, float]:
    """(wall s, CPU s) of `run` over the pages."""
    wall, cpu, child_cpu = time.monotonic(), time.process_time(), children_cpu()
    run(stage, pages)
    return time.monotonic() - wall, time.process_time() - cpu + children_cpu() - child_cpu


def in_process(stage: Extract, pages: list[str]) -> None:
    for html in pages:
        stage.extract_decoded(html)


def in_child(stage: Extract, pages: list[str]) -> None:
    for start in range(0, len(pages), BATCH):
        stage._extract_all(pages[start : start + BATCH])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--methods", default="trafilatura,resiliparse")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if not DEFAULT_DIR.is_dir():
        print(f"{DEFAULT_DIR} not found", file=sys.stderr)
        sys.exit(2)
    pages = [page["html"] for page in load_pages(DEFAULT_DIR, args.limit) if page["html"]]
    print(f"{len(pages)} pages, {sum(map(len, pages)) / 1e6:.1f} M characters")
    print("| method | in-process wall s | child wall s | ratio | in-process CPU s | child CPU s | ratio |")
    print("|---|---|---|---|---|---|---|")
    for method in args.methods.split(","):
        stage = Extract(method=method)
        stage.load()
        stage.extract_decoded(FIRST_PAGE)
        stage._extract_all([FIRST_PAGE])
        here, there = [], []
        for _ in range(args.rounds):
            here.append(timed(in_process, stage, pages))
            there.append(timed(in_child, stage, pages))
        (wall_here, cpu_here), (wall_there, cpu_there) = (tuple(map(min, zip(*runs))) for runs in (here, there))
        print(
            f"| {method} | {wall_here:.1f} | {wall_there:.1f} | {wall_there / wall_here:.2f} "
            f"| {cpu_here:.1f} | {cpu_there:.1f} | {cpu_there / cpu_here:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
