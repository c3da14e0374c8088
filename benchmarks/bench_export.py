"""The Megatron export's speed (pipeline/export.py) against megatron-core's own writer, IndexedDatasetBuilder, on
the same Parquet token shards, in one run; tokens per CPU-second; both outputs checked byte for byte.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_export.py [--sequences 100000] [--seq-len 1024]

The shards: `--sequences` rows of seq_len + 1 random uint16 ids (a tenth of them padded, shorter `length`), in
shards of 8,192 rows as the tokens pass writes them. megatron-core: each sequence read from the same shards and
given to `add_item` (a torch tensor, as Megatron's preprocess_data.py does) then `end_document`, and
`finalize`. One process pinned to one core, time.process_time.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from pipeline import export  # noqa: E402

SHARD_ROWS = 8192


def shards(folder: Path, sequences: int, width: int) -> list[str]:
    rng = np.random.default_rng(0)
    paths = []
    (folder / "tokens").mkdir(parents=True)
    for i, start in enumerate(range(0, sequences, SHARD_ROWS)):
        rows = min(SHARD_ROWS, sequences - start)
        ids = rng.integers(0, 50_000, size=rows * width, dtype=np.uint16)
        length = np.where(rng.random(rows) < 0.1, rng.integers(1, width, rows), width).astype(np.int32)
        table = pa.table(
            {"tokens": pa.FixedSizeListArray.from_arrays(pa.array(ids), width), "length": pa.array(length)}
        )
        path = f"tokens/part-{i:05d}.parquet"
        pq.write_table(table, folder / path)
        paths.append(path)
    return paths


def megatron_builder(folder: Path, paths: list[str], prefix: Path) -> None:
    import torch
    from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder

    builder = IndexedDatasetBuilder(f"{prefix}.bin", dtype=np.uint16)
    for path in paths:
        table = pq.read_table(folder / path)
        width = table.schema.field("tokens").type.list_size
        tokens = table["tokens"].combine_chunks().flatten().to_numpy().reshape(-1, width)
        for row, length in zip(tokens, table["length"].to_numpy()):
            builder.add_item(torch.from_numpy(row[:length].astype(np.int64)))
            builder.end_document()
    builder.finalize(f"{prefix}.idx")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sequences", type=int, default=100_000)
    parser.add_argument("--seq-len", type=int, default=1024)
    args = parser.parse_args()
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    folder = Path(tempfile.mkdtemp(prefix="bench_export_"))
    paths = shards(folder, args.sequences, args.seq_len + 1)
    tokens = sum(int(pq.read_table(folder / p, columns=["length"])["length"].to_numpy().sum()) for p in paths)

    started = time.process_time()
    export.megatron(folder, paths, vocab_size=50_000)
    ours = time.process_time() - started
    started = time.process_time()
    megatron_builder(folder, paths, folder / "builder")
    theirs = time.process_time() - started

    same = all(
        (folder / "tokens" / "megatron" / f"tokens.{ext}").read_bytes() == (folder / f"builder.{ext}").read_bytes()
        for ext in ("bin", "idx")
    )
    print(f"{args.sequences:,} sequences, {tokens:,} tokens; the two outputs byte for byte the same: {same}")
    print("| writer | CPU-s | tokens per CPU-second | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| crawlbelt export (pipeline/export.py) | {ours:.2f} | {tokens / ours:,.0f} | {theirs / ours:.1f}x |")
    print(f"| megatron-core IndexedDatasetBuilder | {theirs:.2f} | {tokens / theirs:,.0f} | 1.0x |")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
