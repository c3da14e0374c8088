"""Benchmark: tokenize, pack and write, in tokens per CPU-second, end to end on curated real text.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_tokenize.py [--copies 8] [--cpus 2] [--engine auto|tokenizers]

The curated text is the docs/ of a belt run over ../shared/realhtml/warc/ (made once, kept in
out/bench/realhtml). Its parts are copied `--copies` times into a curated-Parquet source, so every copy is
encoded again, and the tokens pass (pipeline/passes/tokens.py: encode on Ray Data, mixture, pack, shuffle, write
the shards) runs on it with the realhtml run's tokenizer (training is not part of the figure).

CPU-seconds are those of this process and every process it started (the embedded Ray: raylet, GCS,
workers), read from /proc before and after the pass, so an idle core does not count and a busy neighbour
on the same machine does not either. Also printed: tokenizers' encode_batch_fast and tiktoken alone, on one
thread, on the same text, as references. Skips with a message when ../shared/realhtml is absent.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
REALHTML = ROOT.parent / "shared" / "realhtml" / "warc"
WORK = ROOT / "out" / "bench"


def cpu_seconds() -> float:
    """User + system CPU of this process and all its descendants (children reaped included)."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            pid, parent = int(entry), int(fields[1])
            children.setdefault(parent, []).append(pid)
            stats[pid] = sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    total, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += stats.get(pid, 0)
        todo += children.get(pid, [])
    return total / tick


def curated_text(cpus: int) -> Path:
    """The realhtml run's output folder (run the belt once if it is not there yet)."""
    out = WORK / "realhtml"
    if not (out / "manifest.json").exists():
        from pipeline import belt
        from pipeline.config.load import load_config

        print(f"curating {REALHTML} once into {out} ...", flush=True)
        belt.run(
            load_config(
                str(ROOT / "configs" / "local.yaml"),
                inputs=[str(REALHTML / "*")],
                output=str(out),
                overrides=[f"ray.num_cpus={cpus}"],
            )
        )
    return out


def encode_alone(texts: list[str], tokenizer_json: str) -> dict[str, float]:
    """tokens per CPU-second of each encoder alone, on one thread: tokenizers' encode_batch_fast (no offsets,
    no special tokens), and tiktoken with the same ids where stages.tokens.as_tiktoken finds it exact."""
    from tokenizers import Tokenizer

    from stages.tokens import as_tiktoken

    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    tokenizer = Tokenizer.from_str(tokenizer_json)
    encoding, _ = as_tiktoken(tokenizer)
    encoders = {
        "tokenizers": lambda batch: [e.ids for e in tokenizer.encode_batch_fast(batch, add_special_tokens=False)]
    }
    if encoding:
        encoders["tiktoken"] = lambda batch: [encoding.encode_ordinary(t) for t in batch]
    rates = {}
    for name, encode in encoders.items():
        start, tokens = time.process_time(), 0
        for i in range(0, len(texts), 256):
            tokens += sum(map(len, encode(texts[i : i + 256])))
        rates[name] = tokens / (time.process_time() - start)
    return rates


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=8, help="copies of the curated text to encode")
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of the embedded Ray")
    parser.add_argument("--engine", default="auto", choices=["auto", "tokenizers"], help="tokenizer.engine")
    args = parser.parse_args()
    if not REALHTML.is_dir():
        print(f"bench_tokenize: {REALHTML} not found; nothing to measure (skipped)")
        return 0
    from pipeline.passes import tokens
    from pipeline.config.load import load_config
    from pipeline.engines.engine_ray import start_ray

    source = curated_text(args.cpus)
    curated = WORK / "curated"
    shutil.rmtree(curated, ignore_errors=True)
    curated.mkdir(parents=True)
    parts = sorted((source / "docs").glob("*.parquet"))
    for copy in range(args.copies):
        for part in parts:
            shutil.copyfile(part, curated / f"copy{copy:02d}-{part.name}")
    config_path = WORK / "bench.yaml"
    config_path.write_text(
        f"sources: [{{name: realhtml, input: ['{curated}/*.parquet']}}]\n"
        f"classifier: {{kind: none}}\nray: {{num_cpus: {args.cpus}}}\n"
        f"tokenizer: {{path: '{source / 'tokens' / 'tokenizer.json'}', engine: {args.engine}}}\n"
    )
    out = WORK / "tokens-out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    config = load_config(str(config_path), output=str(out))
    start_ray(config.ray)
    files = tokens.curated_files(config, out, [])

    cpu, wall = cpu_seconds(), time.perf_counter()
    result = tokens.run(config, out, files)
    cpu, wall = cpu_seconds() - cpu, time.perf_counter() - wall
    written = sum(result["tokens"]["tokens_per_source"].values())
    assert all(result["checks"].values()), result["checks"]

    texts = [t for p in parts for t in pq.read_table(p, columns=["text"])["text"].to_pylist()]
    alone = encode_alone(texts, (source / "tokens" / "tokenizer.json").read_text())
    chars = sum(len(t) for t in texts) * args.copies
    print(
        f"curated text: {len(texts) * args.copies:,} documents ({args.copies} copies of {len(texts):,}), "
        f"{chars / 1e6:.1f} M characters"
    )
    print(
        f"tokens pass: {written:,} tokens written in {len(result['tokens']['shards'])} shards, "
        f"{wall:.1f} s wall, {cpu:.1f} CPU-s on {args.cpus} Ray CPUs; steps: "
        + ", ".join(f"{k} {v:.1f} s" for k, v in result["seconds"].items())
    )
    print(
        f"tokenize + pack + write: {written / cpu / 1e6:.2f} M tokens per CPU-second "
        f"({written / wall / 1e6:.2f} M per wall second)"
    )
    for name, rate in alone.items():
        print(
            f"{name} alone, one thread: {rate / 1e6:.2f} M tokens per CPU-second "
            f"(the pass runs at {written / cpu / rate:.0%} of that)"
        )
    print(f"encoded with: {result['tokens']['encoded_with']}")
    print(f"date: {datetime.date.today()}, python {sys.version.split()[0]}, {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
