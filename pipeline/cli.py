"""Command line: `python -m pipeline run CONFIG.yaml [...]`, `python -m pipeline dry-run` and
`python -m pipeline report OUT_DIR`."""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from pipeline.config import ConfigError, load_config

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="crawlbelt", description="Web crawls to curated Parquet on Ray Data.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run the belt on the config's inputs")
    run.add_argument("config", help="YAML config file")
    run.add_argument("--input", nargs="+", action="extend", help="WARC/ARC paths or globs (replace the config's)")
    run.add_argument("--output", help="output folder (replaces the config's)")
    run.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE",
                     help="override one config value, e.g. --set language.threshold=0.8")
    dry = commands.add_parser("dry-run", help="run CRAWL_SAMPLE through the belt and print its verdict table")
    dry.add_argument("--output", help="output folder (default out/dry-run)")
    report = commands.add_parser("report", help="write the HTML report of a finished run (OUT_DIR/report.html)")
    report.add_argument("out_dir", help="a run's output folder")
    report.add_argument("--output", help="where to write the page (default OUT_DIR/report.html)")
    return parser.parse_args(argv)


def write_report(out_dir: str, output: str | None) -> int:
    from pipeline import report

    if not (Path(out_dir) / "manifest.json").is_file():
        print(f"report: {out_dir!r} holds no manifest.json (not a crawlbelt output)", file=sys.stderr)
        return 2
    print(f"report: {report.write(Path(out_dir), Path(output) if output else None)}")
    return 0


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "report":
        return write_report(args.out_dir, args.output)
    try:
        if args.command == "run":
            config = load_config(args.config, overrides=args.overrides, inputs=args.input, output=args.output)
        else:
            config = load_config(str(CONFIGS / "crawl_sample.yaml"), output=args.output)
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2

    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    logging.getLogger("crawlbelt").setLevel(logging.INFO)  # one line per stage and step, with counts
    from pipeline import belt  # imports Ray: only once the config is known to be good

    started = time.perf_counter()
    manifest = belt.run(config)
    seconds = time.perf_counter() - started
    counts = manifest["counts"]
    if args.command == "dry-run":
        from pipeline.crawl_sample import EXPECTED, verdict_table, verdicts

        found = verdicts(Path(config.output))
        print(verdict_table(found))
        print(f"dry run: {seconds:.1f} s, output in {config.output}")
        if found != EXPECTED:
            print("dry run: the verdicts differ from CRAWL_SAMPLE's expected table", file=sys.stderr)
            return 1
        return 0
    tokens = manifest["tokens"]
    print(f"output: {config.output}")
    print(json.dumps(counts, indent=2))
    print(json.dumps(manifest["mixture"]["table"], indent=2))
    print(f"{counts['documents']} documents in {seconds:.1f} s ({counts['documents'] / seconds:.1f} documents/s); "
          f"{tokens['sequences']} sequences of {tokens['seq_len'] + 1} tokens in {len(tokens['shards'])} shards; "
          f"report: {Path(config.output) / 'report.html'}")
    return 0
