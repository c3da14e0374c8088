"""The dedup index an output keeps, OUT/dedup_index/, and how a later run reads it (`dedup.against`).

It holds one entry for every document that reached the dedup pass, kept or removed, of this run and of every
earlier output it was run against: the SHA-1 key of its normalized text, its MinHash signature (near dedup on),
its set of shingle hashes (near dedup with verify: exact), and its cluster. So a new crawl is deduplicated
against everything kept before without reading a text again, and the next crawl names one folder.

    header.json          {"format", "version", the hash settings that must match, what the entries hold,
                          "entries", "shards", "outputs", "digest"}: written last
    shard-NNNNN.parquet  rank, output, id, key[, signature][, shingles], cluster; sharded by key into one
                         file per ENTRIES_PER_SHARD entries (a count from the entries alone, not from
                         dedup.shards, so the bytes depend on no setting of the run's), rows by rank; `output` is null for the documents of the output the
                         index is in (so its bytes do not depend on where that is), else the earlier folder

`rank` is an entry's place in the fixed order of everything read (earlier outputs' entries first, in the order
`dedup.against` names them, then this run's documents in their order); `cluster` is the rank of its cluster's
first document, the one that survived. A later run gives the entries orders below its own documents', so they
come first and always survive, and computes the components again over them and its documents: the candidate
pairs, verifications and clusters are those one run over all the inputs together would have.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from pipeline.config import ConfigError, DedupConfig
from pipeline.storage import MARKER, output_kind, write_atomic
from stages.dedup import HASH_VERSION, shard_of_hex

INDEX = "dedup_index"
HEADER = "header.json"
FORMAT, VERSION = "crawlbelt-dedup-index", 1
ROW_GROUP = 8192  # rows per row group of a shard file: fixed, so the bytes do not depend on the engine
MATCHING = ("shingle_words", "num_perm", "seed")  # dedup settings an index's hashes depend on
ENTRIES_PER_SHARD = 100_000  # a shard is sorted in memory: with shingle sets, about 8 bytes a word of its texts


def shard_name(shard: int) -> str:
    return f"shard-{shard:05d}.parquet"


def hash_settings(config: DedupConfig) -> dict:
    """What an entry's key and signature depend on: an index is read only by a run with the same."""
    return {"hash_version": HASH_VERSION, **{key: getattr(config, key) for key in MATCHING}}


def dup_of_name(output: str, doc_id: str) -> str:
    """How a verdict names a document of an earlier output: its output's folder, '#', its id."""
    return f"{output}#{doc_id}"


# ---------------------------------------------------------------------------------------------
# Checks, before any work (config validation)


def check_against(config) -> None:
    """Every `dedup.against` folder is a complete crawlbelt output, not being written, whose dedup index is
    whole and was written with this config's hash settings, and holds what this config's dedup needs; each
    problem one ConfigError line naming the folder."""
    dedup = config.dedup
    if not dedup.against:
        return
    if not (dedup.exact or dedup.near):
        raise ConfigError("dedup.against: dedup.exact and dedup.near are both off; there is nothing to compare")
    if dedup.paragraphs.enabled:
        raise ConfigError(
            "dedup.against with dedup.paragraphs.enabled: paragraph dedup does not read earlier outputs; "
            "turn one of them off"
        )
    outputs_seen: dict[str, str] = {}
    for i, folder in enumerate(dedup.against):
        header = read_header(folder, f"dedup.against[{i}]", config)
        for output in [folder, *header["outputs"]]:
            if output in outputs_seen:
                raise ConfigError(
                    f"dedup.against[{i}] {folder!r}: its index already holds {output!r}, which "
                    f"{outputs_seen[output]!r} holds too; name only the latest output"
                )
            outputs_seen[output] = folder


def read_header(folder: str, key: str, config) -> dict:
    """The header of an earlier output's index, once every check passed (ConfigError otherwise)."""
    where = f"{key} {folder!r}"
    if "://" in folder:
        raise ConfigError(f"{where}: only a local folder is read (copy the output here first)")
    out = Path(folder)
    if not config.output.startswith("s3://") and out.resolve() == Path(config.output).resolve():
        raise ConfigError(f"{where} is this run's output, which the run replaces; name an earlier one")
    try:
        if not out.is_dir():
            raise ConfigError(f"{where}: no such folder")
        if output_kind(folder) not in ("run", "dry-run") or not (out / MARKER).is_file():
            raise ConfigError(f"{where} is not a crawlbelt output (it has no .crawlbelt marker)")
        if (out / "_work").exists():
            raise ConfigError(
                f"{where} is being written by a run (it has _work/; a run killed there leaves it too: "
                "run that output again to finish it)"
            )
        if json.loads((out / "manifest.json").read_text()).get("complete") is not True:
            raise ConfigError(f"{where} is not a complete output (its manifest.json does not say complete)")
        if not (out / INDEX / HEADER).is_file():
            raise ConfigError(
                f"{where} has no dedup index ({INDEX}/{HEADER}): it was written with dedup off or by an older "
                "crawlbelt; run it again"
            )
        header = json.loads((out / INDEX / HEADER).read_text())
    except (OSError, ValueError) as error:
        said = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise ConfigError(f"{where} cannot be read: {' '.join(said.split())}") from None
    _check_header(header, where, config.dedup)
    _check_digest(out / INDEX, header, where)
    return header


def _check_header(header: dict, where: str, dedup: DedupConfig) -> None:
    if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("version") != VERSION:
        raise ConfigError(f"{where}: its {INDEX}/{HEADER} is not a crawlbelt dedup index of version {VERSION}")
    for name, value in hash_settings(dedup).items():
        if header.get(name) != value:
            setting = name if name == "hash_version" else f"dedup.{name}"
            raise ConfigError(
                f"{where} was deduplicated with {setting} {header.get(name)!r}, this config has {value!r}: its "
                "keys and signatures do not compare; use the same"
            )
    if dedup.near and not header.get("signatures"):
        raise ConfigError(f"{where} was written with dedup.near off: its index has no signatures for near dedup")
    if dedup.near and dedup.verify == "exact" and not header.get("shingle_sets"):
        raise ConfigError(
            f"{where}: its index has no shingle sets (its run had verify: {header.get('verify')}), which "
            "dedup.verify: exact needs; use dedup.verify: estimated"
        )


def _check_digest(index: Path, header: dict, where: str) -> None:
    """The shard files are the ones the header was written for (a damaged or swapped file is refused)."""
    digest = hashlib.sha256()
    for shard in range(int(header.get("shards", 0))):
        try:
            with open(index / shard_name(shard), "rb") as file:
                while chunk := file.read(1 << 20):
                    digest.update(chunk)
        except OSError as error:
            raise ConfigError(f"{where}: {INDEX}/{shard_name(shard)} cannot be read: {error.strerror}") from None
    if digest.hexdigest() != header.get("digest"):
        raise ConfigError(f"{where}: its {INDEX} does not match its {HEADER}'s digest (damaged or changed)")


# ---------------------------------------------------------------------------------------------
# Reading earlier entries into the dedup pass


def copy_entries(against: list[str], hashes: Path, config: DedupConfig) -> int:
    """Write the entries of every earlier output's index into `hashes` beside this run's documents, as rows
    of the same columns, with orders -T..-1 (T entries in all) in the order of their ranks, output after
    output: below every document of this run. A verdict names one as dup_of_name(output, id). Read a shard at
    a time. Returns T."""
    headers = [json.loads((Path(folder) / INDEX / HEADER).read_text()) for folder in against]
    total = sum(header["entries"] for header in headers)
    offset = -total
    for n, (folder, header) in enumerate(zip(against, headers)):
        for shard in range(header["shards"]):
            table = pq.read_table(Path(folder) / INDEX / shard_name(shard))
            if table.num_rows:
                rows = _as_hashes(table, offset, folder, config)
                write_atomic(hashes / f"earlier-{n:03d}-{shard_name(shard)}", partial(pq.write_table, rows))
        offset += header["entries"]
    return total


def _as_hashes(entries: pa.Table, offset: int, folder: str, config: DedupConfig) -> pa.Table:
    """An index shard's entries (of the output in `folder`) as the hashing step's rows (pipeline.passes.dedup.
    _hash_batch's columns), each with the output its document is in."""
    outputs = pc.fill_null(entries["output"], folder)
    names = [dup_of_name(o, i) for o, i in zip(outputs.to_pylist(), entries["id"].to_pylist())]
    columns = {
        "order": pc.add(entries["rank"], offset),
        "id": pa.array(names, pa.string()),
        "output": outputs,
        "key": entries["key"],
    }
    if config.near:
        columns["signature"] = entries["signature"]
    if config.near and config.verify == "exact":
        columns["shingles"] = entries["shingles"]
    return pa.table(columns)


# ---------------------------------------------------------------------------------------------
# Writing the new output's index


def write(
    index: Path,
    hashes: Path,
    orders: np.ndarray,
    cluster: np.ndarray,
    earlier: int,
    config: DedupConfig,
    scratch: Path,
) -> None:
    """The index of everything in `hashes` (sorted `orders`, each one's `cluster`; the `earlier` entries
    have the negative orders) into the folder `index`.

    Rows are spread into a file per shard as they stream from `hashes` (in whatever order the engine wrote
    them), then each shard is sorted by rank and written with fixed row groups: the bytes are the same on
    Ray and Spark, whatever the number of workers. The header, with the files' digest, comes last."""
    mine = orders[orders >= 0]

    def rank(order: np.ndarray) -> np.ndarray:
        return np.where(order < 0, order + earlier, earlier + np.searchsorted(mine, order))

    index_shards = max(1, -(-len(orders) // ENTRIES_PER_SHARD))
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    writers: dict[int, pq.ParquetWriter] = {}
    columns = _index_columns(config)
    source = ds.dataset(hashes, format="parquet")
    for batch in source.to_batches(columns=["order", "id", "output", *columns[3:-1]]):
        order = batch["order"].to_numpy()
        entries = _entries(pa.Table.from_batches([batch]), rank(order), rank(cluster[np.searchsorted(orders, order)]))
        shards = shard_of_hex(entries["key"], index_shards).to_numpy()
        for shard in np.unique(shards):
            part = entries.filter(pa.array(shards == shard))
            if shard not in writers:
                writers[shard] = pq.ParquetWriter(scratch / shard_name(shard), part.schema)
            writers[shard].write_table(part)
    for writer in writers.values():
        writer.close()
    index.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    schema = _index_schema(config)
    for shard in range(index_shards):
        spread = scratch / shard_name(shard)
        table = pq.read_table(spread).sort_by("rank") if spread.exists() else schema.empty_table()
        write_atomic(index / shard_name(shard), _writer_fixed(table.select(schema.names).cast(schema)))
        digest.update((index / shard_name(shard)).read_bytes())
    shutil.rmtree(scratch)
    header = {
        "format": FORMAT,
        "version": VERSION,
        **hash_settings(config),
        "signatures": config.near,
        "shingle_sets": config.near and config.verify == "exact",
        "verify": config.verify,
        "entries": len(orders),
        "shards": index_shards,
        "outputs": _earlier_outputs(config.against),
        "digest": digest.hexdigest(),
    }
    write_atomic(index / HEADER, json.dumps(header, indent=2) + "\n")


def _index_columns(config: DedupConfig) -> list[str]:
    optional = (["signature"] if config.near else []) + (
        ["shingles"] if config.near and config.verify == "exact" else []
    )
    return ["rank", "output", "id", "key", *optional, "cluster"]


def _index_schema(config: DedupConfig) -> pa.Schema:
    types = {
        "rank": pa.int64(),
        "output": pa.string(),
        "id": pa.string(),
        "key": pa.string(),
        "signature": pa.list_(pa.uint32(), config.num_perm),
        "shingles": pa.list_(pa.uint64()),
        "cluster": pa.int64(),
    }
    return pa.schema([(name, types[name]) for name in _index_columns(config)])


def _entries(rows: pa.Table, rank: np.ndarray, cluster: np.ndarray) -> pa.Table:
    """Index rows of hashing rows: an earlier entry keeps its output and its id (its dup_of name, less the
    output); this run's documents' output is null (the output the index is in)."""
    outputs = rows["output"].to_pylist()
    ids = [i if o is None else i[len(o) + 1 :] for o, i in zip(outputs, rows["id"].to_pylist())]
    columns = {
        "rank": pa.array(rank, pa.int64()),
        "output": rows["output"],
        "id": pa.array(ids, pa.string()),
    }
    for name in rows.column_names[3:]:
        columns[name] = rows[name]
    columns["cluster"] = pa.array(cluster, pa.int64())
    return pa.table(columns)


def _writer_fixed(table: pa.Table):
    return partial(pq.write_table, table, row_group_size=ROW_GROUP, compression="zstd")


def _earlier_outputs(against: list[str]) -> list[str]:
    """The folders whose entries an index built against `against` holds (besides its own)."""
    outputs = []
    for folder in against:
        outputs += [folder, *json.loads((Path(folder) / INDEX / HEADER).read_text())["outputs"]]
    return outputs


def files(out: Path) -> list[str]:
    """The index's files, relative to the output (for the manifest)."""
    return sorted(str(p.relative_to(out)) for p in (out / INDEX).glob("*")) if (out / INDEX).is_dir() else []
