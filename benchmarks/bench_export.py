"""The exports' speed (pipeline/passes/export.py) against the consumers' own writers, on the same Parquet token shards,
in one run; tokens per CPU-second; each pair of outputs checked byte for byte: Megatron's (from encode-step files
of as many random documents as sequences, drawn 1.5 passes) against megatron-core's IndexedDatasetBuilder, MDS against MosaicML Streaming's MDSWriter (from .venv/mds-reader, scripts/setup.sh);
nanotron's alone (datatrove writes its format only from its own tokenizer step).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_export.py [--sequences 100000] [--seq-len 1024]

The shards: `--sequences` rows of seq_len + 1 random uint16 ids (the last of each shard padded, a shorter
`length`), in shards of 8,192 rows as the tokens pass writes them. megatron-core: each drawn document with its
end token given to `add_item` (a torch tensor, as Megatron's preprocess_data.py does) then `end_document`, and
`finalize`;
MDSWriter: each sequence without its padding written as {"tokens": ids}, then `finish`. Both read the shards
with the export's own reader (`export.sequences`). One process pinned to one core, time.process_time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # mds_reader: MosaicML Streaming, loaded as the tests load it

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from pipeline.passes import export  # noqa: E402

SHARD_ROWS = 8192


def shards(folder: Path, sequences: int, width: int) -> list[str]:
    rng = np.random.default_rng(0)
    paths = []
    (folder / "tokens").mkdir(parents=True)
    for i, start in enumerate(range(0, sequences, SHARD_ROWS)):
        rows = min(SHARD_ROWS, sequences - start)
        ids = rng.integers(0, 50_000, size=rows * width, dtype=np.uint16)
        length = np.full(rows, width, np.int32)
        length[-1] = rng.integers(1, width)  # a padded sequence: a source's last, as with packing.remainder: pad
        table = pa.table(
            {"tokens": pa.FixedSizeListArray.from_arrays(pa.array(ids), width), "length": pa.array(length)}
        )
        path = f"tokens/part-{i:05d}.parquet"
        pq.write_table(table, folder / path)
        paths.append(path)
    return paths


def encoded(folder: Path, documents: int, mean_tokens: int) -> export.DrawnDocuments:
    """`documents` random documents (random lengths around `mean_tokens`, ids below 50,000, no end token) in
    encode-step files of 8,192 documents, drawn 1.5 passes (every document once, every other one twice) in a
    seeded order: what the tokens pass hands the Megatron export."""
    rng = np.random.default_rng(1)
    n_tokens = rng.integers(1, 2 * mean_tokens, size=documents)
    paths, file_of = [], np.repeat(np.arange(-(-documents // SHARD_ROWS)), SHARD_ROWS)[:documents]
    (folder / "_work" / "encoded").mkdir(parents=True)
    for i, first in enumerate(range(0, documents, SHARD_ROWS)):
        counts = n_tokens[first : first + SHARD_ROWS]
        offsets = np.concatenate([[0], np.cumsum(counts)])
        values = rng.integers(1, 50_000, size=int(offsets[-1]), dtype=np.int64).astype(np.uint32)
        table = pa.table(
            {
                "doc_index": pa.array(np.arange(first, first + len(counts))),
                "n_tokens": pa.array(counts),
                "tokens": pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(values)),
            }
        )
        paths.append(str(folder / "_work" / "encoded" / f"part-{i:05d}.parquet"))
        pq.write_table(table, paths[-1])
    draws = np.concatenate([np.arange(documents), np.arange(0, documents, 2)])
    return export.DrawnDocuments(rng.permutation(draws), n_tokens, file_of, paths)


def megatron_builder(drawn: export.DrawnDocuments, prefix: Path) -> None:
    """megatron-core's writer fed each drawn document with its end token, as preprocess_data.py (append_eod)."""
    import torch
    from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder

    prefix.parent.mkdir(parents=True, exist_ok=True)
    documents = {}
    for path in drawn.encoded_files:
        table = pq.read_table(path)
        for doc, tokens in zip(table["doc_index"].to_pylist(), table["tokens"].to_numpy(zero_copy_only=False)):
            documents[doc] = np.append(tokens.astype(np.int64), 0)
    builder = IndexedDatasetBuilder(f"{prefix}.bin", dtype=np.uint16)
    for doc in drawn.doc_index:
        builder.add_item(torch.from_numpy(documents[doc]))
        builder.end_document()
    builder.finalize(f"{prefix}.idx")


def mds_writer(folder: Path, paths: list[str], out: Path) -> None:
    from mds_reader import streaming_base

    with streaming_base().MDSWriter(columns={"tokens": "ndarray:uint16"}, out=str(out)) as writer:
        for tokens, lengths in export.sequences(folder, paths):
            for row, length in zip(tokens, lengths):
                writer.write({"tokens": row[:length]})


def timed(write) -> float:
    started = time.process_time()
    write()
    return time.process_time() - started


def same_files(ours: Path, theirs: Path) -> bool:
    names = sorted(p.name for p in ours.iterdir())
    return names == sorted(p.name for p in theirs.iterdir()) and all(
        (ours / name).read_bytes() == (theirs / name).read_bytes() for name in names
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sequences", type=int, default=100_000)
    parser.add_argument("--seq-len", type=int, default=1024)
    args = parser.parse_args()
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    import megatron.core.datasets.indexed_dataset  # noqa: F401  (the libraries' imports are not timed)
    from mds_reader import streaming_base

    streaming_base()
    folder = Path(tempfile.mkdtemp(prefix="bench_export_"))
    paths = shards(folder, args.sequences, args.seq_len + 1)
    tokens = sum(int(pq.read_table(folder / p, columns=["length"])["length"].to_numpy().sum()) for p in paths)
    padded = args.sequences * (args.seq_len + 1)  # the ids nanotron writes

    rows: list[tuple[str, float, float, int, bool | None]] = []
    drawn = encoded(folder, args.sequences, args.seq_len)
    drawn_tokens = int((drawn.n_tokens[drawn.doc_index] + 1).sum())
    ours = timed(lambda: export.megatron(folder, drawn, id_limit=50_000, eos_id=0))
    theirs = timed(lambda: megatron_builder(drawn, folder / "builder" / "tokens"))
    same = same_files(folder / "tokens" / "megatron", folder / "builder")
    rows += [
        ("Megatron: crawlbelt (documents drawn)", ours, theirs, drawn_tokens, same),
        ("Megatron: IndexedDatasetBuilder", theirs, theirs, drawn_tokens, same),
    ]
    ours = timed(lambda: export.mds(folder, paths, id_limit=50_000))
    theirs = timed(lambda: mds_writer(folder, paths, folder / "mdswriter"))
    same = same_files(folder / "tokens" / "mds", folder / "mdswriter")
    rows += [("MDS: crawlbelt", ours, theirs, tokens, same), ("MDS: streaming MDSWriter", theirs, theirs, tokens, same)]
    ours = timed(lambda: export.nanotron(folder, paths, id_limit=50_000, eos_id=0))
    rows.append(("nanotron: crawlbelt (ids written with their padding)", ours, ours, padded, None))
    shutil.rmtree(folder)  # the shards and five outputs: about 1.2 GB at the defaults

    print(f"{args.sequences:,} sequences of {args.seq_len + 1} ids, {tokens:,} tokens without padding")
    print("| writer | CPU-s | tokens per CPU-second | ratio to the library's writer | same bytes |")
    print("|---|---:|---:|---:|---|")
    for name, seconds, reference, n, identical in rows:
        checked = "-" if identical is None else identical
        print(f"| {name} | {seconds:.2f} | {n / seconds:,.0f} | {reference / seconds:.1f}x | {checked} |")
    return 0 if all(row[4] is not False for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
