"""Token data in the formats other trainers read (`packing.formats`). Megatron's holds the drawn documents,
for its GPTDataset to pack; the others hold the packed sequences, written from the Parquet shards once they
are complete, so that they hold the same sequences in the same order.

    megatron   tokens/megatron/tokens.bin + tokens.idx: Megatron-LM's (and NeMo's) indexed dataset, read by
               megatron.core.datasets.indexed_dataset.IndexedDataset("OUT/tokens/megatron/tokens")

    mds        tokens/mds/index.json + shard.NNNNN.mds: MosaicML Streaming's MDS shards (LLM Foundry, Composer),
               read by streaming.StreamingDataset(local="OUT/tokens/mds"); a column `tokens`, one sequence a
               sample without its padding, as MDSWriter(columns={"tokens": "ndarray:uint16"}) writes them

    nanotron   tokens/nanotron/tokens.ds + .ds.index + .ds.metadata: datatrove's tokenized format, which
               nanotron reads through datatrove.utils.dataset.DatatroveFileDataset(PATH, seq_len, token_size);
               the metadata names tokens/, the run's tokenizer folder (pipeline/passes/tokens.py's
               write_tokenizer_config), as nanotron's NanosetDatasetsArgs loads it with AutoTokenizer
    huggingface  README.md in the output: a dataset card (sources, stages, counts, tokenizer) whose `configs`
               let datasets.load_dataset("OUT", "docs") and ("OUT", "tokens") read the Parquet files

The Megatron dataset is one merged dataset of the mixture's drawn documents: every draw (a document drawn
twice is there twice) in draw order (pipeline/passes/tokens.py's draw_order), each ending with the end token and
each one Megatron sequence and one document, as Megatron-LM's tools/preprocess_data.py writes documents
(append_eod, no sentence splitting). Megatron-LM's GPTDataset (--data-path OUT/tokens/megatron/tokens,
--seq-length packing.seq_len) shuffles documents and packs them into samples itself, adding no end token:
so it gets whole documents, and every junction in a sample follows an end token; our packed sequences, given
as documents, would be cut and re-packed with no end token between unrelated texts. Its layout
(megatron/core/datasets/indexed_dataset.py): the .bin holds the token ids back to back, uint16 where every
id fits (dtype code 8), else int32 (code 4); the .idx holds the header b"MMIDIDX\\x00\\x00", version 1 (<Q),
the dtype code (<B), the sequence count (<Q), the document count (<Q), then each sequence's length (int32),
its byte offset in the .bin (int64) and the document indices (int64: 0, then the end of each document).
"""

from __future__ import annotations

import hashlib
import html
import json
import struct
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from pipeline.storage import write_atomic
from stages.tokens import token_dtype

FORMATS = ("parquet", "megatron", "mds", "nanotron", "huggingface")
MEGATRON_HEADER = b"MMIDIDX\x00\x00"
MEGATRON_DTYPES = {np.dtype(np.uint16): 8, np.dtype(np.int32): 4}
MDS_SIZE_LIMIT = 1 << 26  # MDSWriter's default: a shard closes before it would pass 64 MiB
# The tokenizer folder that .ds.metadata names, as a path from the output folder: tokens/, where tokenizer.json
# and its tokenizer_config.json are. nanotron passes the name to AutoTokenizer.from_pretrained as it is (relative
# to its working directory), and an output is moved (built in _work/, uploaded, copied to a cluster), so an
# absolute path would name a folder that is gone.
NANOTRON_TOKENIZER = "tokens"


def write(
    out: Path,
    formats: list[str],
    shards: list[str],
    drawn: DrawnDocuments,
    id_limit: int,
    eos_id: int,
) -> dict[str, list[dict]]:
    """Every format besides parquet: Megatron's from the drawn documents, the others from the shards (paths in
    `out`); returns, per format, the files written with their size and SHA-256. `id_limit`: the tokenizer's
    largest id + 1, which the formats' id width holds."""
    written = {}
    if "megatron" in formats:
        written["megatron"] = megatron(out, drawn, id_limit, eos_id)
    if "mds" in formats:
        written["mds"] = mds(out, shards, id_limit)
    if "nanotron" in formats:
        written["nanotron"] = nanotron(out, shards, id_limit, eos_id)
    return written


@dataclass
class DrawnDocuments:
    """The mixture's drawn documents in draw order (pipeline/passes/tokens.py's draw_order), and where their tokens
    are: the encode step's files, Parquet with the columns doc_index and tokens (without the end token)."""

    doc_index: np.ndarray  # each drawn document, in draw order: one drawn twice is there twice
    n_tokens: np.ndarray  # by doc_index: its tokens without the end token
    file_of: np.ndarray  # by doc_index: which of `encoded_files` holds it
    encoded_files: list[str]


def megatron(out: Path, drawn: DrawnDocuments, id_limit: int, eos_id: int) -> list[dict]:
    """Each drawn document with its end token, one Megatron sequence and document each, in draw order: as
    Megatron-LM's preprocess_data.py (append_eod, no sentence splitting) writes documents, for GPTDataset to
    pack. The .bin is sized first, then filled one encoded file at a time, each document at its offset, so
    the bytes do not depend on how the documents were spread over encoded files (engine, workers)."""
    folder = out / "tokens" / "megatron"
    folder.mkdir(parents=True, exist_ok=True)
    dtype = ids_dtype(id_limit)
    lengths = drawn.n_tokens[drawn.doc_index] + 1  # the end token
    write_atomic(folder / "tokens.bin", partial(_megatron_bin, drawn=drawn, lengths=lengths, dtype=dtype, eos=eos_id))
    write_atomic(folder / "tokens.idx", megatron_index(lengths, dtype))
    return [described(out, folder / name) for name in ("tokens.bin", "tokens.idx")]


def _megatron_bin(tmp: Path, drawn: DrawnDocuments, lengths: np.ndarray, dtype: np.dtype, eos: int) -> None:
    starts = np.cumsum(lengths) - lengths
    total = int(lengths.sum())
    with open(tmp, "wb") as data:
        data.truncate(total * dtype.itemsize)
    if not total:
        return
    ids = np.memmap(tmp, dtype, "r+", shape=(total,))
    ids[starts + lengths - 1] = eos
    file_of_draw = drawn.file_of[drawn.doc_index]
    by_file = np.argsort(file_of_draw, kind="stable")
    bounds = np.searchsorted(file_of_draw[by_file], np.arange(len(drawn.encoded_files) + 1))
    for i, path in enumerate(drawn.encoded_files):
        draws = by_file[bounds[i] : bounds[i + 1]]
        if len(draws):
            encoded = pq.read_table(path, columns=["doc_index", "tokens"])
            doc_index = encoded["doc_index"].to_numpy()
            by_doc = np.argsort(doc_index)
            rows = by_doc[np.searchsorted(doc_index, drawn.doc_index[draws], sorter=by_doc)]
            tokens = encoded["tokens"].combine_chunks()
            offsets, values = tokens.offsets.to_numpy(), tokens.values.to_numpy()
            for start, row in zip(starts[draws].tolist(), rows.tolist()):
                ids[start : start + offsets[row + 1] - offsets[row]] = values[offsets[row] : offsets[row + 1]]
    ids.flush()
    del ids


def megatron_index(lengths: np.ndarray, dtype: np.dtype) -> bytes:
    """The .idx of documents of `lengths` ids each, each one sequence (document_indices 0, 1, ..., n)."""
    count = len(lengths)
    pointers = (np.cumsum(lengths) - lengths) * dtype.itemsize
    return b"".join(
        [
            MEGATRON_HEADER + struct.pack("<Q", 1) + struct.pack("<B", MEGATRON_DTYPES[dtype]),
            struct.pack("<Q", count) + struct.pack("<Q", count + 1),
            lengths.astype(np.int32).tobytes(),
            pointers.astype(np.int64).tobytes(),
            np.arange(count + 1, dtype=np.int64).tobytes(),
        ]
    )


def ids_dtype(id_limit: int) -> np.dtype:
    """Megatron's and MDS's ids: uint16 where every id (below `id_limit`) fits, else int32 (Megatron has no
    uint32; config validation bounds the ids far below its limit)."""
    return np.dtype(np.uint16) if id_limit <= np.iinfo(np.uint16).max + 1 else np.dtype(np.int32)


def sequences(out: Path, shards: list[str]):
    """Each shard's sequences as a (rows, seq_len + 1) array and their lengths, one shard in memory at a time."""
    for shard in shards:
        table = pq.read_table(out / shard, columns=["tokens", "length"])
        width = table.schema.field("tokens").type.list_size
        yield table["tokens"].combine_chunks().flatten().to_numpy().reshape(-1, width), table["length"].to_numpy()


def mds(out: Path, shards: list[str], id_limit: int) -> list[dict]:
    """MosaicML Streaming's MDS format, byte for byte as its MDSWriter writes it with its defaults (no
    compression, no hashes; streaming/base/format/mds/writer.py). A shard file: the sample count (uint32),
    the sample offsets from the file's start (count + 1, uint32), the writer's settings as sorted JSON, then
    the samples; a sample: the byte size of its one variable column (uint32), then the ndarray: one byte
    (ndim << 2 | the shape's dtype code), the shape, the ids. index.json lists the shards with those settings."""
    folder = out / "tokens" / "mds"
    folder.mkdir(parents=True, exist_ok=True)
    dtype = ids_dtype(id_limit)
    settings = {"version": 2, "format": "mds", "compression": None, "hashes": [], "size_limit": MDS_SIZE_LIMIT}
    columns = {"column_names": ["tokens"], "column_encodings": [f"ndarray:{dtype.name}"], "column_sizes": [None]}
    header = json.dumps(settings | columns, sort_keys=True).encode()
    index: list[dict] = []
    samples: list[bytes] = []
    size = 8 + len(header)  # the count, the last offset and the settings

    def flush() -> None:
        offsets = np.cumsum([0] + [len(s) for s in samples], dtype=np.int64) + 4 * (len(samples) + 2) + len(header)
        data = struct.pack("<I", len(samples)) + offsets.astype("<u4").tobytes() + header + b"".join(samples)
        name = f"shard.{len(index):05d}.mds"
        write_atomic(folder / name, data)
        raw = {"basename": name, "bytes": len(data), "hashes": {}}
        index.append({"samples": len(samples), "raw_data": raw, "zip_data": None} | settings | columns)
        samples.clear()

    for tokens, lengths in sequences(out, shards):
        for row, length in zip(tokens, lengths):
            shape = np.array([length], np.uint8 if length < 1 << 8 else np.uint16 if length < 1 << 16 else np.uint32)
            code = {1: 0, 2: 1, 4: 2}[shape.itemsize]
            datum = bytes([1 << 2 | code]) + shape.tobytes() + row[:length].astype(dtype).tobytes()
            sample = struct.pack("<I", len(datum)) + datum
            if samples and MDS_SIZE_LIMIT < size + len(sample) + 4:
                flush()
                size = 8 + len(header)
            samples.append(sample)
            size += len(sample) + 4  # and its offset
    if samples:
        flush()
    write_atomic(folder / "index.json", json.dumps({"version": 2, "shards": index}, sort_keys=True))
    names = [shard["raw_data"]["basename"] for shard in index] + ["index.json"]
    return [described(out, folder / name) for name in names]


def nanotron(out: Path, shards: list[str], id_limit: int, eos_id: int) -> list[dict]:
    """datatrove's tokenized file, as its DocumentTokenizer writes it: the ids back to back (uint16 where the
    vocabulary fits, else uint32), whose reader cuts windows of seq_len + 1 ids: each window one of our
    sequences, so a padded sequence keeps its padding; `.index`, the end of each document (after its end
    token) as uint64 positions in the file, from which the reader numbers the positions within documents;
    `.metadata`, "tokenizer|token size", then the token count: the tokenizer is tokens/, the run's tokenizer
    folder, which nanotron's NanosetDatasetsArgs loads with AutoTokenizer.from_pretrained(name)."""
    folder = out / "tokens" / "nanotron"
    folder.mkdir(parents=True, exist_ok=True)
    dtype = token_dtype(id_limit)  # datatrove's: uint16 where every id fits, else uint32
    ends: list[np.ndarray] = []
    written = 0

    def write_ds(tmp: Path) -> None:
        nonlocal written
        with open(tmp, "wb") as data:
            for tokens, length in sequences(out, shards):
                real = np.arange(tokens.shape[1]) < length[:, None]
                ends.append(written + np.flatnonzero((tokens == eos_id) & real) + 1)
                data.write(np.ascontiguousarray(tokens, dtype).data)
                written += tokens.size

    write_atomic(folder / "tokens.ds", write_ds)
    index = np.concatenate(ends) if ends else np.zeros(0, np.int64)
    if written and (not len(index) or index[-1] != written):  # the stream's last document ends with it
        index = np.append(index, written)
    write_atomic(folder / "tokens.ds.index", index.astype("<u8").tobytes())
    write_atomic(folder / "tokens.ds.metadata", f"{NANOTRON_TOKENIZER}|{dtype.itemsize}\n{written}\n")
    return [described(out, folder / name) for name in ("tokens.ds", "tokens.ds.index", "tokens.ds.metadata")]


def described(out: Path, path: Path) -> dict:
    """A file written, as the manifest lists it: its path in the output, its size and its SHA-256."""
    with open(path, "rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    return {"path": str(path.relative_to(out)), "bytes": path.stat().st_size, "sha256": digest}


def card(out: Path, manifest: dict) -> list[dict]:
    """OUT/README.md, a Hugging Face dataset card: its YAML header names a config for each set of Parquet files
    the output holds (card_configs), the first the default; its text states the sources, the stages with what
    each rejected, the counts, the tokenizer and the formats. Written from the manifest once the run is complete."""
    counts, tokens, config = manifest["counts"], manifest["tokens"], manifest["config"]
    configs = card_configs(manifest)
    lines = ["---", *card_header(configs), "tags:", "- crawlbelt", "---", ""]
    lines += [
        f"# {_text(Path(config['output'].rstrip('/')).name)}",
        "",
        "Curated from web crawls by crawlbelt: every record read was kept or rejected with a reason "
        "(`manifest.json` holds the counts, checks, settings and versions; `report.html` the plots).",
        "",
        "## Sources",
        "",
        "| source | weight | input files | records | kept |",
        "|---|---:|---:|---:|---:|",
    ]
    curated = {row["source"]: row["documents"] for row in manifest.get("mixture", {}).get("table", [])}
    for source in config["sources"]:
        if source.get("curated"):  # read at the tokens pass, no record filtered: its documents as they came
            name = f"{_text(source['name'])} (curated: joins at the tokens)"
            lines.append(f"| {name} | {source['weight']:g} | – | – | {curated.get(source['name'], 0):,} |")
            continue
        parts = [p for p in manifest["inputs"] if p["source"] == source["name"]]
        records, kept = sum(p["records"] for p in parts), sum(p["kept"] for p in parts)
        lines.append(f"| {_text(source['name'])} | {source['weight']:g} | {len(parts)} | {records:,} | {kept:,} |")
    lines += ["", "## Filters, in order", ""]
    if all(source.get("curated") for source in config["sources"]):
        lines.append("None ran: every source is curated, and curated documents join at the tokens.")
    else:
        lines += ["| stage | documents in | rejected |", "|---|---:|---:|"]
        for name, row in manifest["stages"].items():
            if "rows_in" in row:
                lines.append(f"| {_text(name)} | {row['rows_in']:,} | {row['rejected']:,} |")
    reasons = sorted(counts["rejected_by_reason"].items(), key=lambda kv: (-kv[1], kv[0]))
    lines += [
        "",
        "## Counts",
        "",
        f"{counts['records_read']:,} records read, {counts['documents']:,} documents, {counts['kept']:,} kept "
        + ("in `docs/` (config `docs`)" if "docs" in configs else "(this output holds no `docs/`)")
        + ". Reject reasons, the most frequent first: "
        + (", ".join(f"{_text(reason)} {n:,}" for reason, n in reasons[:20]) or "none")
        + ".",
        "",
        "## Tokens",
        "",
        f"`tokens/tokenizer.json` ({tokens['vocab_size']:,} ids, end token {tokens['eos_id']}; "
        "`transformers.AutoTokenizer.from_pretrained` loads the folder `tokens/`); "
        f"{tokens['sequences']:,} sequences of {tokens['seq_len'] + 1} {tokens['dtype']} ids"
        + (
            " in `tokens/part-*.parquet` (config `tokens`: `tokens`, `source`, `length`), "
            if "tokens" in configs
            else ", "
        )
        + f"{sum(tokens['tokens_per_source'].values()):,} real tokens. Formats: {', '.join(tokens['formats'])}.",
        "",
    ]
    write_atomic(out / "README.md", "\n".join(lines))
    return [described(out, out / "README.md")]


def card_configs(manifest: dict) -> dict[str, str]:
    """The card's configs, {name: its Parquet files}: only those the output holds, since `datasets` resolves
    every config's files when it loads any one of them. A run of curated sources alone writes no docs/; a run
    whose text is shorter than one sequence writes no token shard."""
    configs = {}
    if manifest["outputs"]["docs"]:
        configs["docs"] = "docs/*.parquet"
    if manifest["tokens"]["shards"]:
        configs["tokens"] = "tokens/part-*.parquet"
    return configs


def card_header(configs: dict[str, str]) -> list[str]:
    """The YAML `configs` of the card, the first one the default (what load_dataset(OUT) loads); none where the
    output holds no Parquet files to load."""
    lines = ["configs:"] if configs else []
    for i, (name, files) in enumerate(configs.items()):
        lines += [f"- config_name: {name}", f"  data_files: {files}"] + (["  default: true"] if i == 0 else [])
    return lines


def _text(name: str) -> str:
    """A name from the config or a run (a source, a stage, a reason) as one line of plain text in the card: its
    line breaks would end a table row or open a YAML header (`---`), `|` would split a cell, markup would be
    read as HTML."""
    return html.escape(" ".join(str(name).split())).replace("|", "\\|")
