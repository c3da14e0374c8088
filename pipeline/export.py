"""Token shards in the formats other trainers read (`packing.formats`), written from the Parquet shards once
they are complete, so that every format holds the same sequences in the same order.

    megatron   tokens/megatron/tokens.bin + tokens.idx: Megatron-LM's (and NeMo's) indexed dataset, read by
               megatron.core.datasets.indexed_dataset.IndexedDataset("OUT/tokens/megatron/tokens")

    nanotron   tokens/nanotron/tokens.ds + .ds.index + .ds.metadata: datatrove's tokenized format, which
               nanotron reads through datatrove.utils.dataset.DatatroveFileDataset(PATH, seq_len, token_size)
    huggingface  README.md in the output: a dataset card (sources, stages, counts, tokenizer) whose `configs`
               let datasets.load_dataset("OUT", "docs") and ("OUT", "tokens") read the Parquet files

The Megatron dataset is one merged dataset: the run's mixture is already drawn and its sequences shuffled,
so each packed sequence (its `length` tokens: a padded last sequence without its padding) is one Megatron
sequence and one document, in shard order. Its layout (megatron/core/datasets/indexed_dataset.py): the .bin
holds the token ids back to back, uint16 where the vocabulary fits (dtype code 8), else int32 (code 4); the
.idx holds the header b"MMIDIDX\\x00\\x00", version 1 (<Q), the dtype code (<B), the sequence count (<Q),
the document count (<Q), then each sequence's length (int32), its byte offset in the .bin (int64) and the
document indices (int64: 0, then the end of each document).
"""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from pipeline.storage import write_atomic

FORMATS = ("parquet", "megatron", "nanotron", "huggingface")
MEGATRON_HEADER = b"MMIDIDX\x00\x00"
MEGATRON_DTYPES = {np.dtype(np.uint16): 8, np.dtype(np.int32): 4}


def write(out: Path, formats: list[str], shards: list[str], vocab_size: int, eos_id: int) -> dict[str, list[dict]]:
    """Every format besides parquet, from the shards (paths in `out`); returns, per format, the files written
    with their size and SHA-256."""
    written = {}
    if "megatron" in formats:
        written["megatron"] = megatron(out, shards, vocab_size)
    if "nanotron" in formats:
        written["nanotron"] = nanotron(out, shards, vocab_size, eos_id)
    return written


def megatron(out: Path, shards: list[str], vocab_size: int) -> list[dict]:
    folder = out / "tokens" / "megatron"
    folder.mkdir(parents=True, exist_ok=True)
    dtype = np.dtype(np.uint16) if vocab_size <= np.iinfo(np.uint16).max + 1 else np.dtype(np.int32)
    lengths: list[np.ndarray] = []

    def write_bin(tmp: Path) -> None:
        with open(tmp, "wb") as data:
            for shard in shards:  # one shard in memory at a time
                table = pq.read_table(out / shard, columns=["tokens", "length"])
                width = table.schema.field("tokens").type.list_size
                tokens = table["tokens"].combine_chunks().flatten().to_numpy().reshape(-1, width)
                length = table["length"].to_numpy().astype(np.int64)
                kept = np.arange(width) < length[:, None]  # a padded sequence without its padding
                data.write(tokens[kept].astype(dtype).tobytes())
                lengths.append(length)

    def write_idx(tmp: Path) -> None:
        length = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
        pointers = np.concatenate([[0], np.cumsum(length * dtype.itemsize)[:-1]]) if len(length) else length
        with open(tmp, "wb") as index:
            index.write(MEGATRON_HEADER + struct.pack("<Q", 1) + struct.pack("<B", MEGATRON_DTYPES[dtype]))
            index.write(struct.pack("<Q", len(length)) + struct.pack("<Q", len(length) + 1))
            index.write(length.astype(np.int32).tobytes())
            index.write(pointers.astype(np.int64).tobytes())
            index.write(np.arange(len(length) + 1, dtype=np.int64).tobytes())  # each sequence a document

    write_atomic(folder / "tokens.bin", write_bin)
    write_atomic(folder / "tokens.idx", write_idx)
    return [described(out, folder / name) for name in ("tokens.bin", "tokens.idx")]


def nanotron(out: Path, shards: list[str], vocab_size: int, eos_id: int) -> list[dict]:
    """datatrove's tokenized file, as its DocumentTokenizer writes it: the ids back to back (uint16 where the
    vocabulary fits, else uint32), whose reader cuts windows of seq_len + 1 ids: each window one of our
    sequences, so a padded sequence keeps its padding; `.index`, the end of each document (after its end
    token) as uint64 positions in the file, from which the reader numbers the positions within documents;
    `.metadata`, "tokenizer|token size", then the token count."""
    folder = out / "tokens" / "nanotron"
    folder.mkdir(parents=True, exist_ok=True)
    dtype = np.dtype(np.uint16) if vocab_size <= np.iinfo(np.uint16).max + 1 else np.dtype(np.uint32)
    ends: list[np.ndarray] = []
    written = 0

    def write_ds(tmp: Path) -> None:
        nonlocal written
        with open(tmp, "wb") as data:
            for shard in shards:
                table = pq.read_table(out / shard, columns=["tokens", "length"])
                width = table.schema.field("tokens").type.list_size
                tokens = table["tokens"].combine_chunks().flatten().to_numpy().reshape(-1, width)
                real = np.arange(width) < table["length"].to_numpy()[:, None]
                ends.append(written + np.flatnonzero((tokens == eos_id) & real) + 1)
                data.write(tokens.astype(dtype).tobytes())
                written += tokens.size

    write_atomic(folder / "tokens.ds", write_ds)
    index = np.concatenate(ends) if ends else np.zeros(0, np.int64)
    if written and (not len(index) or index[-1] != written):  # the stream's last document ends with it
        index = np.append(index, written)
    write_atomic(folder / "tokens.ds.index", index.astype("<u8").tobytes())
    write_atomic(folder / "tokens.ds.metadata", f"crawlbelt tokens/tokenizer.json|{dtype.itemsize}\n{written}\n")
    return [described(out, folder / name) for name in ("tokens.ds", "tokens.ds.index", "tokens.ds.metadata")]


def described(out: Path, path: Path) -> dict:
    """A file written, as the manifest lists it: its path in the output, its size and its SHA-256."""
    with open(path, "rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    return {"path": str(path.relative_to(out)), "bytes": path.stat().st_size, "sha256": digest}


def card(out: Path, manifest: dict) -> list[dict]:
    """OUT/README.md, a Hugging Face dataset card: its YAML header names the two configs (`docs`, the default, and
    `tokens`) by their Parquet files; its text states the sources, the stages with what each rejected, the
    counts, the tokenizer and the formats. Written from the manifest once the run is complete."""
    counts, tokens, config = manifest["counts"], manifest["tokens"], manifest["config"]
    lines = [
        "---",
        "configs:",
        "- config_name: docs",
        "  data_files: docs/*.parquet",
        "  default: true",
        "- config_name: tokens",
        "  data_files: tokens/part-*.parquet",
        "tags:",
        "- crawlbelt",
        "---",
        "",
        f"# {Path(config['output'].rstrip('/')).name}",
        "",
        "Curated from web crawls by crawlbelt: every record read was kept or rejected with a reason "
        "(`manifest.json` holds the counts, checks, settings and versions; `report.html` the plots).",
        "",
        "## Sources",
        "",
        "| source | weight | input files | records | kept |",
        "|---|---:|---:|---:|---:|",
    ]
    for source in config["sources"]:
        parts = [p for p in manifest["inputs"] if p["source"] == source["name"]]
        records, kept = sum(p["records"] for p in parts), sum(p["kept"] for p in parts)
        lines.append(f"| {source['name']} | {source['weight']:g} | {len(parts)} | {records:,} | {kept:,} |")
    lines += ["", "## Filters, in order", "", "| stage | documents in | rejected |", "|---|---:|---:|"]
    for name, row in manifest["stages"].items():
        if "rows_in" in row:
            lines.append(f"| {name} | {row['rows_in']:,} | {row['rejected']:,} |")
    reasons = sorted(counts["rejected_by_reason"].items(), key=lambda kv: (-kv[1], kv[0]))
    lines += [
        "",
        "## Counts",
        "",
        f"{counts['records_read']:,} records read, {counts['documents']:,} documents, {counts['kept']:,} kept in "
        "`docs/` (config `docs`). Reject reasons, the most frequent first: "
        + (", ".join(f"`{reason}` {n:,}" for reason, n in reasons[:20]) or "none")
        + ".",
        "",
        "## Tokens",
        "",
        f"`tokens/tokenizer.json` ({tokens['vocab_size']:,} ids, end token {tokens['eos_id']}); "
        f"{tokens['sequences']:,} sequences of {tokens['seq_len'] + 1} {tokens['dtype']} ids in "
        f"`tokens/part-*.parquet` (config `tokens`: `tokens`, `source`, `length`), "
        f"{sum(tokens['tokens_per_source'].values()):,} real tokens. Formats: {', '.join(tokens['formats'])}.",
        "",
    ]
    write_atomic(out / "README.md", "\n".join(lines))
    return [described(out, out / "README.md")]
