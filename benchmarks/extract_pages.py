"""What the extraction benchmarks share (benchmarks/bench_extract.py, train_extractor.py, explain_extract_gap.py,
bench_extract_child.py): the real pages of ../shared/realhtml read and decoded as the pipeline does, and their
scoring by word tokens (bench_extract.py's docstring defines it). One module both sides import, so that no
benchmark imports another that imports it back."""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stages.extract import METHODS, Extract, decode_html  # noqa: E402
from stages.warc_read import read_warc  # noqa: E402

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "shared" / "realhtml"

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
TOKEN = re.compile(rf"[{_CJK}]|(?:(?![{_CJK}])\w)+")
_SPACE = re.compile(r"\s+")


def tokens(text: str | None) -> Counter:
    return Counter(TOKEN.findall(text.lower())) if text else Counter()


def prf(extracted: Counter, expected: Counter) -> tuple[float, float, float]:
    """Token precision, recall and F1 of one page (multiset overlap)."""
    overlap = sum((extracted & expected).values())
    if not overlap:
        return 0.0, 0.0, 0.0
    precision = overlap / sum(extracted.values())
    recall = overlap / sum(expected.values())
    return precision, recall, 2 * precision * recall / (precision + recall)


def snippets(text: str | None, with_: list[str], without: list[str]) -> tuple[int, int]:
    """(snippets scored right, snippets) for one page."""
    flat = _SPACE.sub(" ", text or "")
    right = sum(_SPACE.sub(" ", s).strip() in flat for s in with_)
    right += sum(_SPACE.sub(" ", s).strip() not in flat for s in without)
    return right, len(with_) + len(without)


def load_pages(root: Path, limit: int | None) -> list[dict]:
    """Every page with ground truth, read and decoded as the pipeline does; `limit` pages per dataset."""
    with open(root / "ground_truth.jsonl", encoding="utf-8") as handle:
        truth = {record["warc_record_id"]: record for record in map(json.loads, handle)}
    pages: list[dict] = []
    per_dataset: Counter[str] = Counter()
    max_bytes = Extract().max_html_bytes
    for index, path in enumerate(sorted((root / "warc").glob("*.warc.gz"))):
        dataset = path.name.rsplit("-", 1)[0]
        for table in read_warc(str(path), index, dataset):
            for row in table.select(["id", "html", "http_charset", "stage"]).to_pylist():
                record = truth.get(row["id"])
                if record is None or (limit is not None and per_dataset[dataset] >= limit):
                    continue
                per_dataset[dataset] += 1
                html = None
                if row["stage"] is None and row["html"] and (max_bytes is None or len(row["html"]) <= max_bytes):
                    html, _ = decode_html(row["html"], row["http_charset"])
                pages.append(
                    dict(
                        id=row["id"],
                        dataset=record["dataset"],
                        html=html,
                        main_text=record.get("main_text"),
                        expected=tokens(record["main_text"]) if record.get("main_text") else None,
                        with_=record.get("with") or [],
                        without=record.get("without") or [],
                    )
                )
    return pages


def make_stage(method: str) -> Extract:
    name, _, option = method.partition(":")
    if name not in METHODS or option not in ("", "fast"):
        raise SystemExit(
            f"--methods: unknown method {method!r}; expected one of {', '.join(METHODS)}, optionally with :fast"
        )
    return Extract(method=name, fast=option == "fast")


def mean(values):
    return sum(values) / len(values) if values else float("nan")
