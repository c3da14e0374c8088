"""Language ID on a prefix of the text: accuracy against the realhtml language labels, and CPU per document.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_langid.py [--methods resiliparse,trafilatura] [--cache DIR]

Texts: every page of ../shared/realhtml/warc/*.warc.gz through our reader and the extract stage (each method
given), as the belt makes them; the label is the ground truth's `lang` (pages without one are left out of
the accuracy). For each prefix length in PREFIXES (and the whole text), fastText lid.176 predicts the
language of the text's first N characters; the verdict is the language stage's (configs/local.yaml's
settings: keep English at probability >= 0.65; texts under 100 characters go to the stop-word detector,
whatever the prefix).

Held out: the prefix is chosen leave-one-dataset-out: for each dataset, the shortest prefix whose accuracy
on the six other datasets' pages is at least the whole text's there minus TOLERANCE; the table reports
that choice's accuracy on the dataset left out, next to the whole text's.

CPU: time.process_time around the stage's detection on every text, per prefix, one core.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stages.extract import Extract  # noqa: E402
from stages.langid import LanguageId  # noqa: E402
from stages.warc_read import read_warc  # noqa: E402

REALHTML = ROOT.parent / "shared" / "realhtml"
PREFIXES = (250, 500, 1000, 2000, 4000, 8000, None)  # None: the whole text
MIDDLES = (1000, 4000)  # also measured, not chosen from: N characters from the middle of the text
TOLERANCE = 0.002


def texts_with_labels(method: str, cache: Path) -> list[dict]:
    """[{dataset, label, text}] for every page the extract stage gives text, extracted once per method."""
    path = cache / f"langid-texts-{method}.jsonl"
    if path.exists():
        return [json.loads(line) for line in path.open()]
    truth = {row["warc_record_id"]: row for row in map(json.loads, (REALHTML / "ground_truth.jsonl").open())}
    extract = Extract(method=method, timeout_s=120)
    rows = []
    for index, warc in enumerate(sorted((REALHTML / "warc").glob("*.warc.gz"))):
        for batch in read_warc(str(warc), index, "bench"):
            batch = extract(batch)
            for record_id, text, stage in zip(
                batch["id"].to_pylist(), batch["text"].to_pylist(), batch["stage"].to_pylist()
            ):
                page = truth.get(record_id)
                if page is None or stage is not None:
                    continue
                rows.append({"dataset": page["dataset"], "label": page["lang"], "text": text})
    cache.mkdir(parents=True, exist_ok=True)
    with path.open("w") as out:
        out.writelines(json.dumps(row) + "\n" for row in rows)
    return rows


def _middle(text: str, size: int) -> str:
    start = max(0, (len(text) - size) // 2)
    return text[start : start + size]


def measure(rows: list[dict]) -> dict:
    """{prefix or "middle N": {"lang": [...], "verdict": [...], "cpu_s": s}} over rows."""
    results: dict = {}
    variants = [(prefix, prefix, None) for prefix in PREFIXES] + [(f"middle {n}", None, n) for n in MIDDLES]
    for key, prefix, middle in variants:
        stage = LanguageId(method="fasttext+stopwords", languages=("en",), short_text_chars=100, max_chars=prefix)
        texts = [row["text"] if middle is None else _middle(row["text"], middle) for row in rows]
        for text in texts[:200]:  # the model loads, the caches warm
            stage.detect(text)
        started = time.process_time()
        detected = [stage.detect(text) for text in texts]
        cpu_s = time.process_time() - started
        verdicts = [
            "keep" if lang == "en" and (not from_fasttext or score >= 0.65) else ("low" if lang == "en" else lang)
            for lang, score, from_fasttext in detected
        ]
        results[key] = {"lang": [lang for lang, _, _ in detected], "verdict": verdicts, "cpu_s": cpu_s}
    return results


def accuracy(rows, langs, datasets) -> tuple[int, int]:
    """(right, labelled): the detected language against the label."""
    pairs = [(row["label"], lang) for row, lang in zip(rows, langs) if row["label"] and row["dataset"] in datasets]
    return sum(label == lang for label, lang in pairs), len(pairs)


def verdict_accuracy(rows, verdicts, datasets) -> tuple[int, int]:
    """(right, labelled): the stage's keep or reject against the label's (keep exactly the English pages)."""
    pairs = [
        (row["label"] == "en", v == "keep")
        for row, v in zip(rows, verdicts)
        if row["label"] and row["dataset"] in datasets
    ]
    return sum(a == b for a, b in pairs), len(pairs)


def report(method: str, rows: list[dict], results: dict) -> list[str]:
    datasets = sorted({row["dataset"] for row in rows})
    whole = results[None]
    lines = [
        f"### {method}: {len(rows)} texts, mean {sum(len(r['text']) for r in rows) / len(rows):,.0f} characters",
        "",
    ]
    lines.append(
        "| prefix | language right (labelled pages) | keep/reject right | verdicts as the whole text's "
        "| language as the whole text's | CPU-s | documents per CPU-s |"
    )
    lines.append("|---|---|---|---|---|---|---|")
    for prefix, result in results.items():
        right, labelled = accuracy(rows, result["lang"], datasets)
        kept_right, _ = verdict_accuracy(rows, result["verdict"], datasets)
        same_verdict = sum(a == b for a, b in zip(result["verdict"], whole["verdict"]))
        same_lang = sum(a == b for a, b in zip(result["lang"], whole["lang"]))
        lines.append(
            f"| {prefix or 'whole text'} | {right}/{labelled} ({right / labelled:.2%}) "
            f"| {kept_right}/{labelled} ({kept_right / labelled:.2%}) | {same_verdict}/{len(rows)} "
            f"| {same_lang}/{len(rows)} | {result['cpu_s']:.3f} | {len(rows) / result['cpu_s']:,.0f} |"
        )
    lines += ["", "Held out (prefix chosen on the other datasets):", ""]
    lines.append(
        "| dataset left out | prefix chosen | keep/reject right, held out | whole text's "
        "| language right, held out | whole text's |"
    )
    lines.append("|---|---|---|---|---|---|")
    totals: dict[str, int] = defaultdict(int)
    for held_out in datasets:
        training = set(datasets) - {held_out}
        whole_right, whole_n = verdict_accuracy(rows, whole["verdict"], training)
        chosen = next(
            prefix
            for prefix in PREFIXES
            if verdict_accuracy(rows, results[prefix]["verdict"], training)[0] >= whole_right - TOLERANCE * whole_n
        )
        figures = {
            "verdict": verdict_accuracy(rows, results[chosen]["verdict"], {held_out})[0],
            "verdict_whole": verdict_accuracy(rows, whole["verdict"], {held_out})[0],
            "lang": accuracy(rows, results[chosen]["lang"], {held_out})[0],
            "lang_whole": accuracy(rows, whole["lang"], {held_out})[0],
        }
        n = accuracy(rows, whole["lang"], {held_out})[1]
        totals["n"] += n
        for key, value in figures.items():
            totals[key] += value
        if n:
            lines.append(
                f"| {held_out} | {chosen or 'whole text'} | "
                + " | ".join(_share(v, n) for v in figures.values())
                + " |"
            )
    n = totals.pop("n")
    lines.append("| **all** | | " + " | ".join(_share(v, n) for v in totals.values()) + " |")
    return lines


def _share(right: int, n: int) -> str:
    return f"{right}/{n} ({right / n:.2%})"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--methods", default="resiliparse,trafilatura", help="extract.method values, comma-separated")
    parser.add_argument("--cache", default="/tmp/bench_langid", help="where the extracted texts are kept")
    args = parser.parse_args(argv)
    if not (REALHTML / "ground_truth.jsonl").exists():
        print(f"bench_langid: {REALHTML} is missing (the real-page set)", file=sys.stderr)
        sys.exit(2)
    for method in args.methods.split(","):
        rows = texts_with_labels(method, Path(args.cache))
        print("\n".join(report(method, rows, measure(rows))), "\n", flush=True)


if __name__ == "__main__":
    main()
