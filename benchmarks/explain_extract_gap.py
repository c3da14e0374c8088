"""Where `resiliparse-blocks` loses to trafilatura on one dataset, held out: the block model trained on the other
datasets (benchmarks/train_extractor.py), scored on this one next to trafilatura, resiliparse's main content kept
whole (its recall bounds any choice of its blocks), and the best choice of those blocks (the training labels).

    PYTHONPATH=. .venv/bin/python benchmarks/explain_extract_gap.py dragnet [mozilla_readability ...]

Then the pages where resiliparse's main-content heuristic kept under half of the main text though the whole
page holds over 90% of it (no classifier of its blocks can bring that text back), the F1 they cost against
trafilatura over the dataset, and their sites (the end of their titles).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from extract_pages import load_pages, make_stage, prf, tokens  # noqa: E402  (benchmarks/ is no package)
from resiliparse.extract.html2text import extract_plain_text  # noqa: E402
from train_extractor import kept_blocks, prepare, train  # noqa: E402

from stages.blocks import second_pass_features  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "realhtml"


def explain(dataset: str, pages: list[dict], prepared: list[dict]) -> None:
    model = train([p for p in prepared if p["dataset"] != dataset])
    trafilatura = make_stage("trafilatura")
    rows: list[
        tuple
    ] = []  # per page: trafilatura's, all blocks', the best blocks' and the model's (P, R, F1), the page
    for page, blocks in zip(
        [p for p in pages if p["dataset"] == dataset and p["expected"]],
        [p for p in prepared if p["dataset"] == dataset],
        strict=True,
    ):
        text = trafilatura.extract_decoded(page["html"])[0] if page["html"] is not None else None
        theirs = prf(tokens(text), page["expected"])
        if not blocks["counts"]:
            rows.append((theirs, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), page))
            continue
        scores = model.second(second_pass_features(blocks["features"], model.first(blocks["features"])))
        keep = kept_blocks(scores, model.threshold)
        every, best = [True] * len(keep), blocks["labels"] > 0
        rows.append(
            (theirs, *(_kept(blocks["counts"], choice, page["expected"]) for choice in (every, best, keep)), page)
        )

    print(f"{dataset}: {len(rows)} pages, threshold chosen on the others {model.threshold}")
    names = ("trafilatura", "resiliparse's main content, every block", "its best blocks (labels)", "held out")
    for i, name in enumerate(names):
        p, r, f = (mean(row[i][k] for row in rows) for k in range(3))
        print(f"  {name:42} F1 {f:.3f}  precision {p:.3f}  recall {r:.3f}")
    missed = [
        row
        for row in rows
        if row[4]["html"] is not None
        and row[1][1] < 0.5
        and prf(tokens(extract_plain_text(row[4]["html"], main_content=False)), row[4]["expected"])[1] >= 0.9
    ]
    lost = sum(row[0][2] - row[3][2] for row in missed) / len(rows)
    sites = Counter(_site(row[4]["html"]) for row in missed)
    print(
        f"  main content under half the main text, the whole page over 90%: {len(missed)} pages, "
        f"{lost:.3f} F1 against trafilatura over the dataset; sites: {dict(sites.most_common(5))}"
    )


def _kept(counts: list[Counter], choice, expected: Counter) -> tuple[float, float, float]:
    """(precision, recall, F1) of the blocks chosen."""
    return prf(sum((c for c, k in zip(counts, choice) if k), Counter()), expected)


def _site(html: str) -> str:
    start = html.find("<title")
    title = html[start : start + 300].split(">", 1)[-1].split("<", 1)[0] if start >= 0 else ""
    return title.split("|")[-1].split(" - ")[-1].strip()[:40]


def main(argv: list[str]) -> int:
    if not SHARED.is_dir():
        print(f"explain_extract_gap: {SHARED} is missing", file=sys.stderr)
        return 2
    pages = load_pages(SHARED, None)
    prepared = prepare(pages)
    for dataset in argv or ["dragnet"]:
        explain(dataset, pages, prepared)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
