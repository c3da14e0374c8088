"""Paragraph dedup (dedup.paragraphs), after exact and near dedup: a paragraph seen before, in the fixed order
of documents, is removed from every later document (or, with `ngram`, a paragraph most of whose n-grams were
seen before: DCLM's BFF rule). Two steps of tasks (engine.map_items), then finalize applies the result:

1. per input file: the units (stages/paragraphs.py) of the documents still kept, each written to the shard its
   hash falls in (`_work/paragraphs/units/shard-S/file-N.parquet`, in document order), and each paragraph's
   count of units (`lines/file-N.parquet`);
2. per shard: its files read in file order, so its units arrive in the global order of documents; whether each
   was seen before is asked of the shard's Bloom filter (or exact set), then the units join it. The units seen,
   counted per paragraph, go to `seen/file-N/shard-S.parquet`. A shard holds its filter and one file's units;
   its filter is sized from the units counted in step 1 (or `expected`) and the false-positive rate set;
3. finalize (pipeline/finalize.py), per input file: a paragraph whose seen units reach the threshold (all of
   its one unit without `ngram`) leaves the text; a document left under `min_words` words is rejected
   `paragraph_dedup:too_short`.

The verdicts depend on the order of documents only, never on the number of workers; with a Bloom filter, on
its size too (the shards and the rate), which the config fixes.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline import engine
from pipeline.config import ParagraphDedupConfig, PassResources
from pipeline.filtering import part_name
from pipeline.storage import part_index, write_atomic
from stages.paragraphs import BloomFilter, ExactSet, seen_before, units

SHOWN_CHARS = 200  # of a paragraph listed in the manifest (samples: five times as many)
TOP_PER_FILE = 50  # the paragraphs removed most often, per input file, summed over files for the report
SAMPLES_PER_FILE = 2
LINES_SCHEMA = pa.schema([("order", pa.int64()), ("para", pa.int32()), ("units", pa.int32())])
SEEN_SCHEMA = pa.schema([("order", pa.int64()), ("para", pa.int32()), ("seen", pa.int32())])


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
            "shards": shards,
        }
        for i in files
    ]
    counted = engine.map_items(hash_file, items, PassResources()) if items else []
    per_shard = np.sum([r["units"] for r in counted], axis=0) if counted else np.zeros(shards, np.int64)
    expected = [config.expected / shards if config.expected else max(int(n), 1) for n in per_shard]
    steps = [
        {"folder": str(folder), "shard": s, "files": files, "filter": config.filter}
        | {"expected": expected[s], "rate": config.false_positive_rate}
        for s in range(shards)
    ]
    results = engine.map_items(find_seen, steps, PassResources())
    return {
        "filter": config.filter,
        "units": int(per_shard.sum()),
        "units_seen": sum(r["seen"] for r in results),
        "bytes_per_shard": max(r["bytes"] for r in results),
        "false_positive_rate": config.false_positive_rate if config.filter == "bloom" else 0.0,
        "estimated_false_positive_rate": max(r["estimated_false_positive_rate"] for r in results),
        "probes": results[0].get("probes"),
    }


def hash_file(item: dict) -> dict:
    """Step 1 for one input file: its kept documents' units, by shard; each paragraph's count of units."""
    table = pq.read_table(item["filtered"], columns=["order", "text", "stage"])
    table = table.filter(pc.is_null(table["stage"]))
    table = table.filter(pc.invert(pc.is_in(table["order"], pa.array(item["dropped"], pa.int64())))).sort_by("order")
    lines, found = units(table["text"], item["ngram"])
    orders = table["order"].to_numpy()[lines["doc"]]
    name = part_name(item["file"])
    folder = Path(item["folder"])
    (folder / "lines").mkdir(exist_ok=True)
    lines_table = pa.table([orders, lines["para"], lines["units"]], schema=LINES_SCHEMA)
    _write(folder / "lines" / name, lines_table)
    shard = (found["hash"] >> np.uint64(40)) % np.uint64(item["shards"])  # by its top bits
    counts = np.bincount(shard.astype(np.int64), minlength=item["shards"])
    for s in np.flatnonzero(counts):
        mine = shard == s
        rows = found["line"][mine]  # in document order: the kernel lists them so
        part = pa.table({"hash": found["hash"][mine], "order": orders[rows], "para": lines["para"][rows]})
        (folder / "units" / f"shard-{s}").mkdir(parents=True, exist_ok=True)
        _write(folder / "units" / f"shard-{s}" / name, part)
    return {"units": counts.tolist()}


def find_seen(item: dict) -> dict:
    """Step 2 for one shard: its units in the global order of documents, each asked whether it was seen."""
    folder = Path(item["folder"])
    seen: BloomFilter | ExactSet = (
        BloomFilter(item["expected"], item["rate"]) if item["filter"] == "bloom" else ExactSet()
    )
    found = 0
    for file in item["files"]:  # a file's orders are all below the next file's
        path = folder / "units" / f"shard-{item['shard']}" / part_name(file)
        if not path.exists():
            continue
        part = pq.read_table(path)
        order, para = part["order"].to_numpy(), part["para"].to_numpy()
        starts = np.ones(len(order), bool)
        starts[1:] = (order[1:] != order[:-1]) | (para[1:] != para[:-1])
        flags = seen_before(part["hash"].to_numpy(), np.cumsum(starts), seen)
        if not flags.any():
            continue
        found += int(flags.sum())
        counted = (
            pa.table({"order": order[flags], "para": para[flags]})
            .group_by(["order", "para"], use_threads=False)
            .aggregate([([], "count_all")])
            .rename_columns(["order", "para", "seen"])
            .sort_by([("order", "ascending"), ("para", "ascending")])
            .cast(SEEN_SCHEMA)
        )
        out = seen_folder(folder, file)
        out.mkdir(parents=True, exist_ok=True)
        _write(out / f"shard-{item['shard']}.parquet", counted)
    return {
        "seen": found,
        "bytes": seen.bytes,
        "estimated_false_positive_rate": seen.estimated_false_positive_rate(),
        "probes": getattr(seen, "probes", None),
    }


def seen_folder(folder: Path, file: int) -> Path:
    """Where step 2 leaves one input file's units seen, a Parquet file per shard."""
    return folder / "seen" / part_name(file).removesuffix(".parquet")


def _write(path: Path, table: pa.Table) -> None:
    write_atomic(path, lambda tmp: pq.write_table(table, tmp))


def removed_paragraphs(folder: Path, file: int, ngram: int | None, threshold: float) -> dict[int, set[int]]:
    """For finalize: per document (order) of one input file, the numbers of its paragraphs that go."""
    parts = sorted(seen_folder(folder, file).glob("shard-*.parquet"))
    if not parts:
        return {}
    seen = pa.concat_tables([pq.read_table(p) for p in parts])
    seen = seen.group_by(["order", "para"], use_threads=False).aggregate([("seen", "sum")])
    lines = pq.read_table(folder / "lines" / part_name(file))
    joined = seen.join(lines, ["order", "para"])
    share = pc.divide(joined["seen_sum"].cast(pa.float64()), joined["units"].cast(pa.float64()))
    goes = joined.filter(pc.greater_equal(share, threshold if ngram else 1.0))
    removed: dict[int, set[int]] = {}
    for order, para in zip(goes["order"].to_pylist(), goes["para"].to_pylist()):
        removed.setdefault(order, set()).add(para)
    return removed


def edit(rows: pa.Table, file: int, settings: dict) -> tuple[pa.Table, dict]:
    """Step 3, in finalize, for the rows of one input file after the dedup verdicts: the kept documents'
    paragraphs that go leave their text (the lines around them stay), the share of characters removed goes in
    `paragraph_removed`, and a document left under `min_words` words is rejected (its text in rejects/ as it
    was). Returns the rows and what was removed (counts, the paragraphs removed most often, the documents most
    changed)."""
    removed = removed_paragraphs(Path(settings["folder"]), file, settings["ngram"], settings["threshold"])
    columns = {name: rows[name].to_pylist() for name in ("text", "stage", "reason", "detail")}
    shares: list[float | None] = [None] * rows.num_rows
    top: Counter[str] = Counter()
    stats = {"documents": 0, "documents_changed": 0, "paragraphs_removed": 0, "chars": 0, "chars_removed": 0}
    samples: list[dict] = []
    for i, (order, doc_id) in enumerate(zip(rows["order"].to_pylist(), rows["id"].to_pylist())):
        text = columns["text"][i]
        if columns["stage"][i] is not None:
            continue
        shares[i] = 0.0
        stats["documents"] += 1
        stats["chars"] += len(text)
        paras = removed.get(order)
        if not paras:
            continue
        lines = text.split("\n")
        kept = "\n".join(line for p, line in enumerate(lines) if p not in paras)
        share = 1 - len(kept) / len(text)
        top.update(lines[p].strip()[:SHOWN_CHARS] for p in paras)
        stats["documents_changed"] += 1
        stats["paragraphs_removed"] += len(paras)
        stats["chars_removed"] += len(text) - len(kept)
        words = len(kept.split())
        if words < settings["min_words"]:
            columns["stage"][i], columns["reason"][i] = "paragraph_dedup", "too_short"
            columns["detail"][i] = f"{share:.1%} of its characters removed, {words} words left"
        else:
            columns["text"][i] = kept
            shares[i] = share
            if len(samples) < SAMPLES_PER_FILE or share > samples[-1]["removed"]:  # the most changed
                sample = {"id": doc_id, "removed": round(share, 4), "before": text[: SHOWN_CHARS * 5]}
                samples = sorted([*samples, sample | {"after": kept[: SHOWN_CHARS * 5]}], key=most_removed)
                del samples[SAMPLES_PER_FILE:]
    for name, values in columns.items():
        rows = rows.set_column(rows.schema.get_field_index(name), name, pa.array(values, pa.string()))
    rows = rows.append_column("paragraph_removed", pa.array(shares, pa.float64()))
    return rows, stats | {"top": top.most_common(TOP_PER_FILE), "samples": samples}


def most_removed(sample: dict) -> tuple:
    return -sample["removed"], sample["id"]
