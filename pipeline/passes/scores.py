"""What each scorer saw and dropped, for the manifest's `scorers` section and the report.

A classifier keeps what resembles its reference set (DESIGN.md warns of it); this is where a user sees whom it
turned away. Read on the driver from the filter pass's parts (every document, its score, its verdict), after
the filter pass and before `_work` goes, for every scorer of the belt (`classifier`, `{scorer: NAME}` entries):
  - the distribution of its score per source (a histogram over the scores of the documents it scored);
  - the share it rejected per language and per registered domain (the most scored domains);
  - the documents just above and just below its threshold.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline import spec

BINS = 20
DOMAINS = 20  # the most scored domains listed
NEAR = 3  # documents each side of the threshold
SAMPLE_CHARS = 300


def scorers(config) -> list[tuple[str, str, float | None]]:
    """(stage name, score column, threshold) of every scorer the belt runs: a transformers scorer with
    `int_threshold` by its int_score_NAME, the column its rule reads."""
    found = []
    for stage in spec.declared(config):
        if stage.spec.name == "classifier" and "scorer" not in stage.entry and config.classifier.kind != "none":
            found.append(("classifier", "quality_score", config.classifier.threshold))
        elif stage.entry.get("int_threshold") is not None:  # a regression head judged by its int score
            found.append((stage.spec.name, f"int_score_{stage.spec.name}", stage.entry["int_threshold"]))
        elif "scorer" in stage.entry:
            found.append((stage.spec.name, f"score_{stage.spec.name}", stage.entry.get("threshold")))
    return found


def summarize(filtered: Path, config) -> dict:
    """manifest["scorers"]: per scorer, its scores per source, its rejections per language and domain, and the
    documents nearest its threshold."""
    from pipeline.report import registered_domain

    wanted = scorers(config)
    if not wanted:
        return {}
    tables = [_read(part, ["order", "source", "lang", "url", "reason", *(c for _, c, _ in wanted)]) for part in
              sorted(filtered.glob("*.parquet"))]  # fmt: skip
    if not tables:
        return {}
    rows = pa.concat_tables(tables)
    summary = {}
    for name, column, threshold in wanted:
        scored = rows.filter(pc.is_valid(rows[column]))
        scores = scored[column].to_numpy(zero_copy_only=False).astype(float)
        dropped = np.array([reason == f"{name}:below_threshold" for reason in scored["reason"].to_pylist()], bool)
        finite = scores[np.isfinite(scores)]
        edges = np.histogram_bin_edges(finite, bins=BINS) if len(finite) else np.zeros(BINS + 1)
        sources = scored["source"].to_pylist()
        by_source = {}
        for source in sorted(set(sources)):
            mine = scores[[s == source for s in sources]]
            mine = mine[np.isfinite(mine)]
            counts, _ = np.histogram(mine, bins=edges)
            by_source[source] = {
                "scored": len(mine),
                "mean": round(float(mine.mean()), 6) if len(mine) else None,
                "counts": [int(c) for c in counts],
            }
        languages = [lang or "none" for lang in scored["lang"].to_pylist()]
        domains = [registered_domain(url) for url in scored["url"].to_pylist()]
        summary[name] = {
            "column": column,
            "threshold": threshold,
            "scored": scored.num_rows,
            "rejected": int(dropped.sum()),
            "edges": [round(float(e), 6) for e in edges],
            "by_source": by_source,
            "by_language": _shares(languages, dropped),
            "by_domain": dict(list(_shares(domains, dropped).items())[:DOMAINS]),
            "near_threshold": _near(filtered, scored, scores, column, threshold),
        }
    return summary


def _read(part: Path, columns: list[str]) -> pa.Table:
    """These columns of a part; one no stage of the belt adds (`lang` without `language`) all null."""
    names = pq.read_schema(part).names
    table = pq.read_table(part, columns=[c for c in columns if c in names])
    for column in columns:
        if column not in names:
            table = table.append_column(column, pa.nulls(table.num_rows, pa.string()))
    return table.select(columns)


def _shares(keys: list[str], dropped: np.ndarray) -> dict[str, list[int]]:
    """key -> [scored, rejected], the most scored first (ties by name)."""
    scored: Counter[str] = Counter(keys)
    rejected: Counter[str] = Counter(key for key, out in zip(keys, dropped) if out)
    return {key: [scored[key], rejected[key]] for key, _ in sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))}


def _near(filtered: Path, scored: pa.Table, scores: np.ndarray, column: str, threshold) -> dict:
    """The NEAR documents with the lowest scores at or above the threshold and the highest below it (by score,
    then by the fixed order of documents), with their text's start."""
    if threshold is None:
        return {}
    orders = scored["order"].to_numpy()
    above = [i for i in np.lexsort((orders, scores)) if scores[i] >= threshold][:NEAR]
    below = [i for i in np.lexsort((orders, -scores)) if scores[i] < threshold][:NEAR]
    picked = {int(orders[i]) for i in [*above, *below]}
    texts: dict[int, dict] = {}
    for part in sorted(filtered.glob("*.parquet")):
        table = pq.read_table(part, columns=["order", "url", "source", "text"])
        table = table.filter(pc.is_in(table["order"], pa.array(sorted(picked), pa.int64())))
        for row in table.to_pylist():
            texts[row["order"]] = row
    result: defaultdict[str, list] = defaultdict(list)
    for side, positions in (("above", above), ("below", below)):
        for i in positions:
            row = texts[int(orders[i])]
            text = row["text"] or ""
            result[side].append(
                {
                    "url": row["url"],
                    "source": row["source"],
                    column: round(float(scores[i]), 6),
                    "text": text[:SAMPLE_CHARS],
                }
            )
    return dict(result)
