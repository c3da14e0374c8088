"""Paragraph dedup (dedup.paragraphs), after exact and near dedup: a paragraph seen before, in the fixed order
of documents, is removed from every later document (or, with `ngram`, DCLM's BFF: a paragraph more than
`threshold` of whose n-grams a kept paragraph had before, and with `remove_type` old-both or document BFF's
document rule). Steps of tasks (engine.map_items), then finalize applies the result:

1. per input file: the units (stages/paragraphs.py) of the documents still kept, each written to the shard its
   hash falls in (`_work/paragraphs/units/shard-S/file-N.parquet`, in document order), and each paragraph's
   count of units (`lines/file-N.parquet`);
2. per shard: its files read in file order, so its units arrive in the global order of documents; whether each
   was seen before is asked of the shard's Bloom filter (or exact set), then the units join it. The units seen,
   counted per paragraph, go to `seen/file-N/shard-S.parquet`. A shard holds its filter and one file's units;
   its filter is sized from the units counted in step 1 (or `expected`) and the false-positive rate set.
   With `ngram` (BFF), whether a unit counts depends on whether the paragraphs that had it were kept, which no
   shard can know: the shard finds instead its units that recur in a later paragraph (seen before, then read
   again), and writes their every occurrence with a dense id to `repeats/file-N/shard-S.parquet`;
3. with `ngram` only, one task (BFF's one filter, in the order of documents): each file's paragraphs and their
   repeated units' ids, each paragraph judged against the ids inserted so far (one byte an id), a kept one's
   ids then inserted; the paragraphs and documents that go are written to `removed/file-N.parquet`;
4. finalize (pipeline/passes/finalize.py), per input file: the paragraphs that go leave the text (without `ngram`,
   every paragraph seen before); a document BFF's document rule removes is rejected
   `paragraph_dedup:duplicate`, one left under `min_words` words `paragraph_dedup:too_short`.

The verdicts depend on the order of documents only, never on the number of workers; with a Bloom filter
and without `ngram`, on its size too (the shards and the rate), which the config fixes. With `ngram` a Bloom
filter only finds the candidates that recur (its false positives are dropped once the ids are exact), so the
verdicts are the exact set's.
"""

from __future__ import annotations

import itertools
import math
import re
import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.engines import engine
from pipeline.config import ConfigError, ParagraphDedupConfig, PassResources
from pipeline.passes.filtering import part_name
from pipeline.storage import part_index
from stages.paragraphs import (
    WHOLE_DOCUMENT,
    BloomFilter,
    ExactSet,
    bff_units,
    filter_too_large,
    line_hashes,
    resolve,
    seen_before,
    units,
)
from stages.table_rows import sort_rows

SHOWN_CHARS = 200  # of a paragraph listed in the manifest (samples: five times as many)
TOP_PER_FILE = 50  # the paragraphs removed most often, per input file, summed over files for the report
SAMPLES_PER_FILE = 2
BATCH_BYTES = 8 << 20  # of text: the documents steps 1 and 2 and finalize take at a time
UNITS_PER_GROUP = 1 << 20  # of a shard, asked of its filter at a time (about 150 bytes each in step 2)
TRACKED_PARAGRAPHS = 1 << 20  # distinct paragraphs removed counted per file at most (40 bytes each)
WORD = re.compile(r"\S+")  # a word as str.split() splits them (Unicode whitespace)
LINES_SCHEMA = pa.schema([("order", pa.int64()), ("para", pa.int32()), ("units", pa.int32())])
SEEN_SCHEMA = pa.schema([("order", pa.int64()), ("para", pa.int32()), ("seen", pa.int32())])
REPEATS_SCHEMA = pa.schema([("order", pa.int64()), ("para", pa.int32()), ("id", pa.int64())])
REMOVED_SCHEMA = pa.schema([("order", pa.int64()), ("para", pa.int32()), ("share", pa.float64())])


def run(filtered: Path, verdicts: pa.Table, config: ParagraphDedupConfig, shards: int, work: Path) -> dict:
    """Steps 1 and 2 over the documents of `filtered` that every stage and the dedup `verdicts` kept; the
    units seen are left in `work/paragraphs` for finalize. Returns what the manifest states of the filter."""
    folder = work / "paragraphs"
    shutil.rmtree(folder, ignore_errors=True)  # a killed run's leftovers: these steps start over
    folder.mkdir(parents=True)
    dropped = verdicts["order"].to_numpy()
    files = sorted(part_index(p.name) for p in filtered.glob("file-*.parquet"))
    items = [
        {
            "filtered": str(filtered / part_name(i)),
            "folder": str(folder),
            "file": i,
            "dropped": dropped[(dropped >> 40) == i].tolist(),
            "ngram": config.ngram or 0,
            "min_ngram": config.min_ngram or config.ngram or 0,  # null: the n-gram size, as DCLM runs BFF
            "whole_document": config.remove_type == "document",
            "shards": shards,
        }
        for i in files
    ]
    counted = engine.map_items(hash_file, items, PassResources()) if items else []
    per_shard = np.sum([r["units"] for r in counted], axis=0) if counted else np.zeros(shards, np.int64)
    expected = units_per_shard(config.expected, per_shard)
    if config.filter == "bloom" and (why := filter_too_large(max(expected), config.false_positive_rate)):
        raise ConfigError(f"dedup.paragraphs: {int(per_shard.sum()):,} units counted need {why}; raise dedup.shards")
    steps = [
        {"folder": str(folder), "shard": s, "files": files, "filter": config.filter}
        | {"expected": expected[s], "rate": config.false_positive_rate}
        for s in range(shards)
    ]
    results = engine.map_items(find_repeats if config.ngram else find_seen, steps, PassResources())
    stated = {}
    if config.ngram:  # step 3: BFF's verdicts, in one task
        ids = np.cumsum([0] + [r["repeated"] for r in results]).tolist()
        judge = {"folder": str(folder), "files": files, "ids": ids, "threshold": config.threshold}
        document_rule = config.remove_type == "old-both"
        (stated,) = engine.map_items(judge_paragraphs, [judge | {"document_rule": document_rule}], PassResources())
    return stated | {
        "filter": config.filter,
        "units": int(per_shard.sum()),
        "units_seen": sum(r["seen"] for r in results),
        "bytes_per_shard": max(r["bytes"] for r in results),
        "false_positive_rate": config.false_positive_rate if config.filter == "bloom" else 0.0,
        "estimated_false_positive_rate": max(r["estimated_false_positive_rate"] for r in results),
        "probes": results[0].get("probes"),
    }


def units_per_shard(expected: int | None, counted: np.ndarray) -> list[int]:
    """The units each shard's filter is sized for: `expected` over the shards, or the units step 1 counted
    in the shard (at least as many as are distinct) where those are more, so that a too small `expected`
    cannot raise the false-positive rate (`expected: 1` made a filter of 8 bytes that found half the corpus
    seen)."""
    shards = len(counted)
    return [max(int(n), math.ceil((expected or 0) / shards), 1) for n in counted]


def hash_file(item: dict) -> dict:
    """Step 1 for one input file: its kept documents' units, by shard; each paragraph's count of units. The
    documents go through in batches of about BATCH_BYTES of text (whole documents), each batch a row group
    of every file written, so that step 2 and finalize can read them a batch at a time."""
    table = pq.read_table(item["filtered"], columns=["order", "text", "stage"])
    table = table.filter(pc.is_null(table["stage"]))
    table = table.filter(pc.invert(pc.is_in(table["order"], pa.array(item["dropped"], pa.int64()))))
    table = sort_rows(table, "order")  # a file's texts may pass 2 GiB: no sort_by
    name = part_name(item["file"])
    folder = Path(item["folder"])
    counts = np.zeros(item["shards"], np.int64)
    with PartWriters() as writers:
        for start, end in batches(table["text"]):
            batch = table.slice(start, end - start)
            if item["ngram"]:
                lines, found = bff_units(batch["text"], item["ngram"], item["min_ngram"], item["whole_document"])
            else:
                lines, found = units(batch["text"])
            orders = batch["order"].to_numpy()[lines["doc"]]
            lines_table = pa.table([orders, lines["para"], lines["units"]], schema=LINES_SCHEMA)
            writers.write(folder / "lines" / name, lines_table)
            shard = (found["hash"] >> np.uint64(40)) % np.uint64(item["shards"])  # by its top bits
            in_batch = np.bincount(shard.astype(np.int64), minlength=item["shards"])
            for s in np.flatnonzero(in_batch):
                mine = shard == s
                rows = found["line"][mine]  # in document order: the kernel lists them so
                part = pa.table({"hash": found["hash"][mine], "order": orders[rows], "para": lines["para"][rows]})
                for start, end in paragraph_slices(part, UNITS_PER_GROUP):  # step 2 reads a row group at a time
                    writers.write(folder / "units" / f"shard-{s}" / name, part.slice(start, end - start))
            counts += in_batch
    return {"units": counts.tolist()}


def batches(texts: pa.ChunkedArray) -> list[tuple[int, int]]:
    """(start, end) of consecutive slices of `texts` of about BATCH_BYTES of text, at least one text each."""
    sizes = np.cumsum(pc.fill_null(pc.binary_length(texts), 0).to_numpy(zero_copy_only=False))
    bounds, start = [], 0
    while start < len(sizes):
        before = sizes[start - 1] if start else 0
        end = max(int(np.searchsorted(sizes, before + BATCH_BYTES, "right")), start + 1)
        bounds.append((start, end))
        start = end
    return bounds


def paragraph_slices(part: pa.Table, limit: int) -> list[tuple[int, int]]:
    """(start, end) of consecutive slices of `part`'s units (in key order) of about `limit` units, cut only
    where a paragraph starts (step 2 needs whole paragraphs); a paragraph of more units is one slice."""
    order, para = part["order"].to_numpy(), part["para"].to_numpy()
    starts = np.flatnonzero(np.r_[True, (order[1:] != order[:-1]) | (para[1:] != para[:-1])])
    bounds, start = [], 0
    while start < len(order):
        after = int(np.searchsorted(starts, start + limit, "left"))
        end = int(starts[after]) if after < len(starts) else len(order)
        bounds.append((start, end))
        start = end
    return bounds


class PartWriters:
    """Parquet files written a row group at a time (one per call to write), each under a temporary name
    until all are closed: a reader, or a rerun after a crash, never sees half a file under its name."""

    def __init__(self) -> None:
        self.open: dict[Path, pq.ParquetWriter] = {}

    def write(self, path: Path, table: pa.Table) -> None:
        if path not in self.open:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.open[path] = pq.ParquetWriter(path.with_name(f".{path.name}.tmp"), table.schema, use_dictionary=False)
        self.open[path].write_table(table, row_group_size=max(table.num_rows, 1))  # one row group: whole paragraphs

    def __enter__(self) -> PartWriters:
        return self

    def __exit__(self, failed, *_) -> None:
        for path, writer in self.open.items():
            writer.close()
            tmp = path.with_name(f".{path.name}.tmp")
            if failed:
                tmp.unlink(missing_ok=True)
            else:
                os.replace(tmp, path)


def find_seen(item: dict) -> dict:
    """Step 2 for one shard: its units in the global order of documents, each asked whether it was seen, a
    row group (a batch of step 1's whole documents) at a time."""
    folder = Path(item["folder"])
    seen: BloomFilter | ExactSet = (
        BloomFilter(item["expected"], item["rate"]) if item["filter"] == "bloom" else ExactSet()
    )
    found = 0
    with PartWriters() as writers:
        for file in item["files"]:  # a file's orders are all below the next file's
            path = folder / "units" / f"shard-{item['shard']}" / part_name(file)
            if not path.exists():
                continue
            units_file = pq.ParquetFile(path)
            for group in range(units_file.num_row_groups):
                counted = _seen_in(units_file.read_row_group(group), seen)
                if counted.num_rows:
                    found += int(pc.sum(counted["seen"]).as_py())
                    writers.write(seen_folder(folder, file) / f"shard-{item['shard']}.parquet", counted)
    return {
        "seen": found,
        "bytes": seen.bytes,
        "estimated_false_positive_rate": seen.estimated_false_positive_rate(),
        "probes": getattr(seen, "probes", None),
    }


def find_repeats(item: dict) -> dict:
    """Step 2 for one shard with `ngram`: its units seen in an earlier paragraph (by its filter: a false
    positive only adds a candidate) make its set of repeated units, and every occurrence of those, with the
    unit's rank in the set (its id, once offset by the earlier shards' counts), goes to
    `repeats/file-N/shard-S.parquet`. Two reads of the shard's units, a row group at a time."""
    folder = Path(item["folder"])
    seen: BloomFilter | ExactSet = (
        BloomFilter(item["expected"], item["rate"]) if item["filter"] == "bloom" else ExactSet()
    )
    repeated, found = ExactSet(), 0
    for part in _shard_groups(folder, item):
        flags = seen_before(part["hash"].to_numpy(), paragraph_keys(part), seen)
        found += int(flags.sum())
        repeated.add(part["hash"].to_numpy()[flags])
    with PartWriters() as writers:
        for file in item["files"]:
            for part in _shard_groups(folder, item, [file]):
                hashes = part["hash"].to_numpy()
                mine = repeated.contains(hashes)
                if mine.any():
                    ids = np.searchsorted(repeated.values, hashes[mine]).astype(np.int64)
                    rows = pa.table([part["order"].filter(mine), part["para"].filter(mine), ids], schema=REPEATS_SCHEMA)
                    writers.write(repeats_folder(folder, file) / f"shard-{item['shard']}.parquet", rows)
    return {
        "seen": found,
        "repeated": len(repeated.values),
        "bytes": seen.bytes + repeated.bytes,
        "estimated_false_positive_rate": seen.estimated_false_positive_rate(),
        "probes": getattr(seen, "probes", None),
    }


def _shard_groups(folder: Path, item: dict, files: list[int] | None = None):
    """The row groups of one shard's units (whole paragraphs each), file after file."""
    for file in item["files"] if files is None else files:
        path = folder / "units" / f"shard-{item['shard']}" / part_name(file)
        if path.exists():
            units_file = pq.ParquetFile(path)
            for group in range(units_file.num_row_groups):
                yield units_file.read_row_group(group)


def paragraph_keys(part: pa.Table) -> np.ndarray:
    """A number per unit, the same for the units of one paragraph, rising with the paragraph (units in key order)."""
    order, para = part["order"].to_numpy(), part["para"].to_numpy()
    starts = np.ones(len(order), bool)
    starts[1:] = (order[1:] != order[:-1]) | (para[1:] != para[:-1])
    return np.cumsum(starts)


def repeats_folder(folder: Path, file: int) -> Path:
    return folder / "repeats" / part_name(file).removesuffix(".parquet")


def judge_paragraphs(item: dict) -> dict:
    """Step 3 (one task, BFF's single filter): every file's paragraphs with units in the order of documents,
    each judged on its repeated units against those inserted so far (one byte per repeated unit of the
    corpus); the paragraphs that go, and with `document_rule` (old-both) the documents more than `threshold`
    of whose units were found, written per file to `removed/file-N.parquet` (para WHOLE_DOCUMENT for a
    document). Memory: the inserted flags and one file's paragraphs with units and their repeated units."""
    folder = Path(item["folder"])
    inserted = np.zeros(item["ids"][-1], np.uint8)
    removed_paragraphs, removed_documents = 0, 0
    with PartWriters() as writers:
        for file in item["files"]:
            path = folder / "lines" / part_name(file)
            if not path.exists():
                continue
            lines = pq.read_table(path, schema=LINES_SCHEMA)
            if not lines.num_rows:
                continue
            bounds, ids = repeated_units_by_line(folder, file, lines, item["ids"])
            units_left = lines["units"].to_numpy()
            removed, contained = resolve(units_left, bounds, ids, inserted, item["threshold"])
            rows = verdict_rows(lines, removed, contained, item["threshold"], item["document_rule"])
            removed_paragraphs += int(removed.sum())
            removed_documents += int(pc.sum(pc.equal(rows["para"], WHOLE_DOCUMENT)).as_py() or 0)
            if rows.num_rows:
                writers.write(folder / "removed" / part_name(file), rows)
    return {"repeated_units": item["ids"][-1], "judge_bytes": int(inserted.nbytes)} | {
        "bff_paragraphs_removed": removed_paragraphs,
        "bff_documents_removed": removed_documents,
    }


def repeated_units_by_line(
    folder: Path, file: int, lines: pa.Table, offsets: list[int]
) -> tuple[np.ndarray, np.ndarray]:
    """One file's repeated units grouped by paragraph (the rows of `lines`, in key order): (bounds, ids), the
    ids of line i being ids[bounds[i]:bounds[i + 1]], in the order step 1 found them."""
    parts = []
    for path in sorted(repeats_folder(folder, file).glob("shard-*.parquet")):
        shard = int(path.stem.removeprefix("shard-"))
        part = pq.read_table(path, schema=REPEATS_SCHEMA)
        parts.append(part.set_column(2, "id", pc.add(part["id"], offsets[shard])))
    line_order, line_para = lines["order"].to_numpy(), lines["para"].to_numpy()
    if not parts:
        return np.zeros(len(line_order) + 1, np.int64), np.zeros(0, np.int64)
    found = pa.concat_tables(parts)
    distinct = np.unique(line_order)  # a dense rank of the documents: (rank, para) fits one int64 key

    def key(order: np.ndarray, para: np.ndarray) -> np.ndarray:
        return np.searchsorted(distinct, order).astype(np.int64) << 32 | (para.astype(np.int64) + 1)

    line_of = np.searchsorted(key(line_order, line_para), key(found["order"].to_numpy(), found["para"].to_numpy()))
    by_line = np.argsort(line_of, kind="stable")
    bounds = np.searchsorted(line_of[by_line], np.arange(len(line_order) + 1))
    return bounds, found["id"].to_numpy()[by_line]


def verdict_rows(
    lines: pa.Table, removed: np.ndarray, contained: np.ndarray, threshold: float, document_rule: bool
) -> pa.Table:
    """The paragraphs that go, with their share of units found, and (old-both) the documents whose units found
    over all their units exceed `threshold` (para WHOLE_DOCUMENT), sorted by (order, para)."""
    order, para, units_of = lines["order"].to_numpy(), lines["para"].to_numpy(), lines["units"].to_numpy()
    share = contained / units_of
    rows = {"order": order[removed], "para": para[removed], "share": share[removed]}
    if document_rule:
        starts = np.flatnonzero(np.r_[True, order[1:] != order[:-1]])
        found, total = np.add.reduceat(contained, starts), np.add.reduceat(units_of.astype(np.int64), starts)
        whole = found / total > threshold
        rows = {
            "order": np.concatenate([rows["order"], order[starts][whole]]),
            "para": np.concatenate([rows["para"], np.full(int(whole.sum()), WHOLE_DOCUMENT, np.int32)]),
            "share": np.concatenate([rows["share"], (found / total)[whole]]),
        }
    table = pa.table([rows["order"], rows["para"], rows["share"]], schema=REMOVED_SCHEMA)
    return table.sort_by([("order", "ascending"), ("para", "ascending")])


def _seen_in(part: pa.Table, seen: BloomFilter | ExactSet) -> pa.Table:
    """The units of `part` (whole paragraphs, in key order) seen before, counted per paragraph; they join `seen`."""
    order, para = part["order"].to_numpy(), part["para"].to_numpy()
    starts = np.ones(len(order), bool)
    starts[1:] = (order[1:] != order[:-1]) | (para[1:] != para[:-1])
    flags = seen_before(part["hash"].to_numpy(), np.cumsum(starts), seen)
    return (
        pa.table({"order": order[flags], "para": para[flags]})
        .group_by(["order", "para"], use_threads=False)
        .aggregate([([], "count_all")])
        .rename_columns(["order", "para", "seen"])
        .sort_by([("order", "ascending"), ("para", "ascending")])
        .cast(SEEN_SCHEMA)
    )


def seen_folder(folder: Path, file: int) -> Path:
    """Where step 2 leaves one input file's units seen, a Parquet file per shard."""
    return folder / "seen" / part_name(file).removesuffix(".parquet")


def removed_paragraphs(
    folder: Path, file: int, ngram: int | None, orders: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For finalize: the paragraphs of one input file's documents with an order in [first, last] (`orders`)
    that go, as (order, para, share of units found) arrays sorted by order and para (WHOLE_DOCUMENT first: a
    document that goes whole). Reads only the row groups that hold those orders."""
    within = [("order", ">=", orders[0]), ("order", "<=", orders[1])]
    if ngram:  # step 3's verdicts
        path = folder / "removed" / part_name(file)
        if not path.exists():
            return np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0)
        gone = pq.read_table(path, filters=within, schema=REMOVED_SCHEMA)
        return gone["order"].to_numpy(), gone["para"].to_numpy(), gone["share"].to_numpy()
    parts = sorted(seen_folder(folder, file).glob("shard-*.parquet"))
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0)
    seen = pa.concat_tables([pq.read_table(p, filters=within, schema=SEEN_SCHEMA) for p in parts])
    seen = seen.select(["order", "para"]).sort_by([("order", "ascending"), ("para", "ascending")])
    return seen["order"].to_numpy(), seen["para"].to_numpy().astype(np.int32), np.ones(seen.num_rows)


def edit(rows: pa.Table, file: int, settings: dict) -> tuple[pa.Table, dict]:
    """Step 3, in finalize, for the rows of one input file after the dedup verdicts: the kept documents'
    paragraphs that go leave their text (the lines around them stay), the share of characters removed goes in
    `paragraph_removed`, and a document left under `min_words` words, or with none at all, is rejected
    `too_short` (its text in rejects/ as it was); one BFF's document rule removes, `duplicate`. Returns the rows and what was removed (counts, the paragraphs removed most
    often, the documents most changed).

    Memory: a document's lines are arrays (a few bytes a line), never a Python object each, and the
    paragraphs removed are counted by hash in a table of at most TRACKED_PARAGRAPHS (RemovedCounts)."""
    least_words = max(settings["min_words"], 1)  # a text with no words left is no document, whatever min_words
    columns = {name: rows[name].to_pylist() for name in ("text", "stage", "reason", "detail")}
    shares: list[float | None] = [None] * rows.num_rows
    counts = RemovedCounts()
    stats = {"documents": 0, "documents_changed": 0, "paragraphs_removed": 0, "chars": 0, "chars_removed": 0}
    stats["documents_removed"] = 0  # whole, by BFF's document rule
    samples: list[dict] = []
    all_orders = rows["order"].to_numpy()
    ends = {start: end for start, end in batches(rows["text"])}
    for i, (order, doc_id) in enumerate(zip(all_orders.tolist(), rows["id"].to_pylist())):
        if i in ends:  # the paragraphs that go, read for a batch of documents at a time
            span = (order, int(all_orders[ends[i] - 1]))
            orders, paras, found = removed_paragraphs(Path(settings["folder"]), file, settings["ngram"], span)
        text = columns["text"][i]
        if columns["stage"][i] is not None:
            continue
        shares[i] = 0.0
        stats["documents"] += 1
        stats["chars"] += len(text)
        first, last = np.searchsorted(orders, order, "left"), np.searchsorted(orders, order, "right")
        mine = paras[first:last]
        if not len(mine):
            continue
        if mine[0] == WHOLE_DOCUMENT:  # BFF's document rule: the whole text, as it was, to rejects/
            columns["stage"][i], columns["reason"][i] = "paragraph_dedup", "duplicate"
            columns["detail"][i] = f"{found[first]:.1%} of its {settings['ngram']}-grams seen before"
            shares[i] = None
            stats["documents_removed"] += 1
            stats["chars_removed"] += len(text)
            continue
        kept, removed_lines = without_lines(text, mine)
        share = 1 - len(kept) / len(text)
        counts.add(i, removed_lines)
        stats["documents_changed"] += 1
        stats["paragraphs_removed"] += len(mine)
        stats["chars_removed"] += len(text) - len(kept)
        words = count_words(kept, least_words)
        if words < least_words:
            columns["stage"][i], columns["reason"][i] = "paragraph_dedup", "too_short"
            columns["detail"][i] = f"{share:.1%} of its characters removed, {words} words left"
        else:
            columns["text"][i] = kept
            shares[i] = share
            if len(samples) < SAMPLES_PER_FILE or share > samples[-1]["removed"]:  # the most changed
                sample = {"id": doc_id, "removed": round(share, 4), "before": text[: SHOWN_CHARS * 5]}
                samples = sorted([*samples, sample | {"after": kept[: SHOWN_CHARS * 5]}], key=most_removed)
                del samples[SAMPLES_PER_FILE:]
    top = counts.most_common(TOP_PER_FILE, rows["text"])
    for name, values in columns.items():
        rows = rows.set_column(rows.schema.get_field_index(name), name, pa.array(values, pa.string()))
    rows = rows.append_column("paragraph_removed", pa.array(shares, pa.float64()))
    return rows, stats | {"top": top, "samples": samples}


def without_lines(text: str, paras: np.ndarray) -> tuple[str, dict[str, np.ndarray]]:
    """`text` without its lines numbered `paras` (as "\\n".join of the lines left), and those lines' hashes and
    byte spans in the text's UTF-8, worked out on arrays: a document of millions of one-word lines stays a few
    bytes a line."""
    data = np.frombuffer(text.encode(), np.uint8)
    breaks = np.flatnonzero(data == 10)
    starts = np.concatenate([[0], breaks + 1])
    ends = np.concatenate([breaks, [len(data)]])
    keep_line = np.ones(len(starts), bool)
    keep_line[paras] = False
    last_kept = np.flatnonzero(keep_line)[-1] if keep_line.any() else -1
    keep = np.repeat(keep_line, ends - starts + 1)[: len(data)]  # each line's bytes and the "\n" after it
    keep[breaks] = keep_line[:-1] & (np.arange(len(breaks)) < last_kept)  # a "\n" only between lines kept
    lines = {"start": starts[paras], "end": ends[paras]}
    return data[keep].tobytes().decode(), lines | {"hash": line_hashes(data, lines["start"], lines["end"])}


def count_words(text: str, at_most: int) -> int:
    """The words of `text` as str.split() finds them, counted up to `at_most` (no list of words is built)."""
    return sum(1 for _ in itertools.islice(WORD.finditer(text), at_most))


class RemovedCounts:
    """The paragraphs removed in one file, counted by the hash of their stripped text: (hash, count, where
    first seen) arrays. Past TRACKED_PARAGRAPHS distinct ones, the least counted half is dropped (the counts
    of a paragraph dropped and seen again start over), so a file of millions of distinct paragraphs removed
    holds a bounded table and the often removed ones, which the report lists, stay."""

    def __init__(self) -> None:
        self.hashes = np.zeros(0, np.uint64)
        self.counts = np.zeros(0, np.int64)
        self.first = np.zeros((0, 3), np.int64)  # row, byte start and end of the first occurrence

    def add(self, row: int, lines: dict[str, np.ndarray]) -> None:
        """Counts one document's removed lines (in document order)."""
        mine, at, counts = np.unique(lines["hash"], return_index=True, return_counts=True)
        where = np.column_stack([np.full(len(mine), row), lines["start"][at], lines["end"][at]])
        unique, first, inverse = np.unique(np.concatenate([self.hashes, mine]), return_index=True, return_inverse=True)
        self.counts = np.bincount(inverse, np.concatenate([self.counts, counts])).astype(np.int64)
        self.first = np.concatenate([self.first, where])[first]  # np.unique's first: the earliest occurrence
        self.hashes = unique
        if len(unique) > TRACKED_PARAGRAPHS:
            self._keep(self._ranked()[: TRACKED_PARAGRAPHS // 2])

    def _ranked(self) -> np.ndarray:
        """Most counted first, then first seen first (as Counter.most_common)."""
        return np.lexsort((self.first[:, 1], self.first[:, 0], -self.counts))

    def _keep(self, chosen: np.ndarray) -> None:
        chosen = np.sort(chosen)  # the hashes stay sorted
        self.hashes, self.counts, self.first = self.hashes[chosen], self.counts[chosen], self.first[chosen]

    def most_common(self, n: int, texts: pa.ChunkedArray) -> list[tuple[str, int]]:
        """The `n` most removed, each as its first occurrence's words, of `texts` (the file's rows)."""
        top = []
        for k in self._ranked()[:n]:
            row, start, end = self.first[k]
            line = texts[int(row)].as_py().encode()[start:end].decode()
            # as the exact mode keys it (its words, one space between), so spacing variants count as one
            top.append((" ".join(line.split())[:SHOWN_CHARS], int(self.counts[k])))
        return top


def most_removed(sample: dict) -> tuple:
    return -sample["removed"], sample["id"]
