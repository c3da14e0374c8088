"""Finalize: apply the dedup verdicts, write docs/ and rejects/ (one part per input file, rows in the
fixed order, so the bytes do not depend on the number of workers), and write a manifest whose counts are
read back from the written files and checked against what the reader produced."""

from __future__ import annotations

import json
import platform
from collections import Counter
from functools import partial
from importlib import metadata
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline import redact, spec
from pipeline.engines import engine
from pipeline.passes import paragraphs
from pipeline.config import json_value
from pipeline.storage import part_name, write_atomic
from stages.ledger import NOT_DOCUMENT
from stages.table_rows import sort_rows

DOC_COLUMNS = [
    "id",
    "url",
    "source",
    "file",
    "offset",
    "date",
    "content_type",
    "charset",
    "text",
    "lang",
    "lang_score",
    "quality_score",
    "dup_count",
]
REJECT_COLUMNS = ["id", "url", "source", "file", "offset", "stage", "reason", "detail", "dup_of", "text"]
SNIPPET_CHARS = 500  # rejects.text: snippet
TOP_PARAGRAPHS, SAMPLES = 20, 5  # paragraph dedup's, in the manifest and the report
COUNT_SCHEMA = pa.schema([("file_index", pa.int64()), ("records", pa.int64()), ("counts", pa.string())])
# docs/ has these columns whatever the belt; a stage the belt lacks leaves its column null
OPTIONAL_COLUMNS = {"lang": pa.string(), "lang_score": pa.float64(), "quality_score": pa.float64()}


class InvariantError(RuntimeError):
    """The counts do not add up: some record was lost or counted twice."""


def doc_columns(config) -> list[str]:
    """docs/'s columns: DOC_COLUMNS, then the columns the belt's other stages add (scores, users' stages')."""
    return DOC_COLUMNS + [column for column in spec.added_columns(config) if column not in DOC_COLUMNS]


def write_part(
    rows: pa.Table,
    verdicts: pa.Table,
    out: str,
    reject_text: str,
    doc_columns: list[str] = DOC_COLUMNS,
    paragraph_dedup: dict | None = None,
    dup_counts: pa.Table | None = None,
) -> pa.Table:
    """Per group: all rows of one input file in, its docs and rejects parts written, its counts out.
    `paragraph_dedup`: where paragraph dedup left its verdicts, and its settings (pipeline/passes/paragraphs.py).
    `dup_counts`: (order, dup_count) of the dedup pass's survivors with copies; None: dedup was off."""
    rows = sort_rows(rows, "order")  # a file's texts may pass 2 GiB: no sort_by
    file_index = rows["order"][0].as_py() >> 40
    rows = _with_dup_counts(_with_optional_columns(_apply_verdicts(rows, verdicts)), dup_counts)
    removed = None
    if paragraph_dedup is not None:
        rows, removed = paragraphs.edit(rows, file_index, paragraph_dedup)
    is_document = pc.invert(pc.fill_null(pc.equal(rows["stage"], NOT_DOCUMENT), False))
    documents = rows.filter(is_document)
    kept = documents.filter(pc.is_null(documents["stage"])).select(doc_columns)
    rejected = documents.filter(pc.is_valid(documents["stage"]))
    rejected = _with_reject_text(rejected, reject_text).select(REJECT_COLUMNS)
    for folder, table in (("docs", kept), ("rejects", rejected)):
        if table.num_rows:
            write_table(table, Path(out) / folder / part_name(file_index))
    not_documents = rows.filter(pc.invert(is_document))
    counts = {
        "not_documents": dict(Counter(not_documents["reason"].to_pylist())),
        "documents": documents.num_rows,
        "kept": kept.num_rows,
        "rejected_by_stage": dict(Counter(rejected["stage"].to_pylist())),
        "rejected_by_reason": dict(Counter(rejected["reason"].to_pylist())),
    }
    if removed is not None:
        counts["paragraph_dedup"] = removed
    return pa.table({"file_index": [file_index], "records": [rows.num_rows], "counts": [json.dumps(counts)]})


def _with_optional_columns(rows: pa.Table) -> pa.Table:
    """docs/ has one schema whatever the config: without a classifier (classifier.kind: none) the score is
    null, and so are the language columns of a belt without `language`."""
    for column, type_ in OPTIONAL_COLUMNS.items():
        if column not in rows.column_names:
            rows = rows.append_column(column, pa.nulls(rows.num_rows, type_))
    return rows


def _with_dup_counts(rows: pa.Table, dup_counts: pa.Table | None) -> pa.Table:
    """docs/'s dup_count: how many copies of the document (itself included) the dedup pass saw, exact and
    near, in this run and the earlier outputs of dedup.against; 1 for one it found none of; null with dedup off."""
    if dup_counts is None:
        return rows.append_column("dup_count", pa.nulls(rows.num_rows, pa.int64()))
    found = pc.index_in(rows["order"], value_set=dup_counts["order"].combine_chunks())
    counts = pc.fill_null(pc.take(dup_counts["dup_count"], found), 1)
    return rows.append_column("dup_count", counts.cast(pa.int64()))


def _with_reject_text(rejected: pa.Table, choice: str) -> pa.Table:
    """The extracted text as rejects.text says: `full`, its first SNIPPET_CHARS characters (`snippet`), or
    null (`none`: the column stays, so that rejects/ has one schema whatever the config). Rows rejected
    before extraction have no text (null)."""
    text = rejected["text"]
    if choice == "snippet":
        text = pc.utf8_slice_codeunits(text, 0, SNIPPET_CHARS)  # code points, as Python's len counts them
    elif choice == "none":
        text = pa.nulls(rejected.num_rows, pa.string())
    return rejected.set_column(rejected.schema.get_field_index("text"), "text", text)


def _apply_verdicts(rows: pa.Table, verdicts: pa.Table) -> pa.Table:
    """Mark the rows the dedup pass rejected (verdicts: order, stage, reason, dup_of)."""
    verdicts = verdicts.filter(pc.is_in(verdicts["order"], rows["order"]))
    if not verdicts.num_rows:
        return rows
    by_order = {o: i for i, o in enumerate(verdicts["order"].to_pylist())}
    columns = {name: rows[name].to_pylist() for name in ("stage", "reason", "dup_of")}
    new = {name: verdicts[name].to_pylist() for name in ("stage", "reason", "dup_of")}
    for position, order in enumerate(rows["order"].to_pylist()):
        i = by_order.get(order)
        if i is not None:
            for name in columns:
                columns[name][position] = new[name][i]
    for name, values in columns.items():
        rows = rows.set_column(rows.schema.get_field_index(name), name, pa.array(values, pa.string()))
    return rows


def write_parts(
    filtered: Path,
    verdicts: pa.Table,
    out: Path,
    partitions: int,
    reject_text: str,
    doc_columns: list[str] = DOC_COLUMNS,
    paragraph_dedup: dict | None = None,
    dup_counts: pa.Table | None = None,
) -> pa.Table:
    """Per input file of the filter pass's Parquet folder `filtered`: write its parts and return its counts
    (one row per file)."""
    write = partial(
        write_part,
        verdicts=verdicts,
        out=str(out),
        reject_text=reject_text,
        doc_columns=doc_columns,
        paragraph_dedup=paragraph_dedup,
        dup_counts=dup_counts,
    )
    return engine.group_to_table(filtered, "file", partitions, write, COUNT_SCHEMA).sort_by("file_index")


def _read_back(out: Path) -> tuple[int, Counter]:
    """Kept rows and rejected rows by stage, counted from the files on disk, not from what was sent."""
    kept = sum(pq.ParquetFile(p).metadata.num_rows for p in sorted((out / "docs").glob("*.parquet")))
    rejected: Counter[str] = Counter()
    for path in sorted((out / "rejects").glob("*.parquet")):
        rejected.update(pq.read_table(path, columns=["stage"])["stage"].to_pylist())
    return kept, rejected


def manifest(
    *,
    config,
    out: Path,
    files,
    records_read: int,
    part_counts: pa.Table,
    stage_seconds: dict,
    pass_seconds: dict,
    wall_seconds: float,
    node_seconds: dict | None = None,
    scorers: dict | None = None,
    paragraph_filter: dict | None = None,
) -> dict:
    """Sum the per-file counts, check the ledger, write manifest.json; a failed check raises InvariantError.

    `records_read` comes from the filter pass's output, while documents and kept/rejected come from
    finalize and from the files on disk, so a row lost in between shows up as a failed check.
    """
    not_documents: Counter[str] = Counter()
    by_stage: Counter[str] = Counter()
    by_reason: Counter[str] = Counter()
    documents = kept = 0
    # every input file read, one with no rows (a 0-byte file) too: it has no counts of its own
    parts = [{"file": path, "source": source, "records": 0, "documents": 0, "kept": 0} for path, source in files]
    removed: list[dict] = []  # paragraph dedup, per input file
    for file_index, records, text in zip(*(part_counts[c].to_pylist() for c in COUNT_SCHEMA.names)):
        c = json.loads(text)
        not_documents.update(c["not_documents"])
        by_stage.update(c["rejected_by_stage"])
        by_reason.update(c["rejected_by_reason"])
        documents += c["documents"]
        kept += c["kept"]
        if "paragraph_dedup" in c:
            removed.append(c["paragraph_dedup"])
        parts[file_index].update(records=records, documents=c["documents"], kept=c["kept"])

    kept_on_disk, rejected_on_disk = _read_back(out)
    checks = {
        "records_read == documents + sum(not_documents)": records_read == documents + sum(not_documents.values()),
        "documents == kept + sum(rejected)": documents == kept_on_disk + sum(rejected_on_disk.values()),
        "files on disk match the counts": kept_on_disk == kept and rejected_on_disk == by_stage,
    }

    stages = {}
    alive = documents
    names = spec.stage_names(config)
    for stage in names:
        seconds = stage_seconds.get(stage)
        stages[stage] = {
            "rows_in": alive,
            "rejected": by_stage.get(stage, 0),
            "seconds": None if seconds is None else round(seconds, 3),
        }
        alive -= by_stage.get(stage, 0)
    for name, seconds in pass_seconds.items():
        stages.setdefault(name, {})["seconds"] = round(seconds, 3)

    result = {
        "complete": False,  # until the tokens pass is done too (add_tokens)
        "counts": {
            "records_read": records_read,
            "not_documents": dict(sorted(not_documents.items())),
            "documents": documents,
            "kept": kept,
            "rejected": {s: by_stage[s] for s in names if by_stage.get(s)},
            "rejected_by_reason": dict(sorted(by_reason.items())),
        },
        "invariants": checks,
        "stages": stages,
        "wall_seconds": round(wall_seconds, 3),
        # Ray node id -> seconds of per-document stage work it did (read to classifier)
        "nodes": {node: round(seconds, 3) for node, seconds in sorted((node_seconds or {}).items())},
        "inputs": parts,
        "outputs": {
            "docs": sorted(str(p.relative_to(out)) for p in (out / "docs").glob("*.parquet")),
            "rejects": sorted(str(p.relative_to(out)) for p in (out / "rejects").glob("*.parquet")),
            "dedup_index": sorted(str(p.relative_to(out)) for p in (out / "dedup_index").glob("*")),
        },
        # per scorer: its scores per source, what it rejected per language and domain, the documents near
        # its threshold (pipeline/passes/scores.py)
        "scorers": scorers or {},
        "paragraph_dedup": _paragraph_dedup(paragraph_filter, removed) if paragraph_filter else None,
        "config": config.to_dict(),
        "versions": _versions(),
    }
    write_manifest(out, result)
    _raise_on_failed(out, checks, "ledger")
    return result


def _paragraph_dedup(filter_stats: dict, per_file: list[dict]) -> dict:
    """The manifest's paragraph_dedup section: the filter (pipeline/passes/paragraphs.py), what was removed, the
    paragraphs removed most often (each file's most frequent, summed) and the documents most changed."""
    kinds = ("documents", "documents_changed", "documents_removed", "paragraphs_removed")
    totals = {key: sum(f[key] for f in per_file) for key in kinds}
    chars, chars_removed = sum(f["chars"] for f in per_file), sum(f["chars_removed"] for f in per_file)
    top: Counter[str] = Counter()
    for f in per_file:
        for text, removed in f["top"]:  # one text may come twice: lines that differ only in their spacing
            top[text] += removed
    return {
        **filter_stats,
        **totals,
        "chars": chars,
        "chars_removed": chars_removed,
        "share_of_chars_removed": round(chars_removed / chars, 6) if chars else 0.0,
        "top_paragraphs": [{"text": text, "removed": n} for text, n in top.most_common(TOP_PARAGRAPHS)],
        "samples": sorted((s for f in per_file for s in f["samples"]), key=paragraphs.most_removed)[:SAMPLES],
    }


def add_tokens(out: Path, manifest: dict, result: dict, seconds: float, wall_seconds: float) -> dict:
    """Add the tokens pass (`mixture` and `tokens` sections, its steps' seconds, its checks) to the manifest."""
    manifest["mixture"] = result["mixture"]
    manifest["tokens"] = result["tokens"]
    manifest["invariants"].update(result["checks"])
    for step, step_seconds in result["seconds"].items():
        manifest["stages"][step] = {"seconds": round(step_seconds, 3)}
    manifest["stages"]["tokens_pass"] = {"seconds": round(seconds, 3)}
    manifest["outputs"]["tokens"] = [f["path"] for f in result["tokens"]["tokenizer_files"]] + [
        shard["path"] for shard in result["tokens"]["shards"]
    ]
    for name, files in result["tokens"]["exports"].items():
        manifest["outputs"][name] = [f["path"] for f in files]
    manifest["wall_seconds"] = round(wall_seconds, 3)
    manifest["complete"] = all(manifest["invariants"].values())  # a failed check is never committed
    write_manifest(out, manifest)
    _raise_on_failed(out, result["checks"], "token shard")
    return manifest


def write_manifest(out: Path, manifest: dict) -> None:
    write_atomic(out / "manifest.json", json.dumps(redact.tree(manifest), indent=2, default=json_value) + "\n")


def write_table(table: pa.Table, path: Path) -> None:
    """A Parquet part (zstd), written whole or not at all, its folder made if need be."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, partial(pq.write_table, table, compression="zstd"))


def _raise_on_failed(out: Path, checks: dict, what: str) -> None:
    failed = [name for name, ok in checks.items() if not ok]
    if failed:
        raise InvariantError(f"{what} check failed: {'; '.join(failed)} (see {out / 'manifest.json'})")


def _versions() -> dict:
    names = ["crawlbelt", "ray", "pyarrow", "warcio", "trafilatura", "fasttext-predict", "numpy", "numba", "tokenizers"]
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions
