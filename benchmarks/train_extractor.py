"""Train the block classifier of `extract.method: resiliparse-blocks` (stages/blocks.py) on the ground truth
of ../shared/realhtml, and score it leaving one dataset out.

    python benchmarks/train_extractor.py [--held-out] [--write] [--data DIR]

Pages: every page with a `main_text` (cleaneval, daniel, dragnet, l3s_gn1, mozilla_readability,
scrapinghub_aeb), read and decoded as the pipeline does (benchmarks/extract_pages.load_pages); each is cut
into resiliparse's main-content blocks (stages.blocks.blocks).

Labels: a block is main text when its word tokens (extract_pages.tokens) occur, in order, in the page's
ground truth, or when it has 8 tokens or more and 80% of them occur there. Each block weighs its tokens + 1,
each page 1 in all: the benchmark's F1 is a mean over pages, counted in tokens.

Model: two passes of one tanh layer of 16 units (the second sees the first's scores around each block),
full-batch Adam from a fixed seed, numpy only: the same data give the same weights. The threshold a block
must score is the one of 0.30, 0.35 ... 0.70 with the best mean F1 on the training pages.

--held-out: for each dataset, train on the other five and score on it (all six rotations); prints the
table of held-out F1 per dataset. --write: train on all six and write stages/data/extract_blocks.json (the
shipped model; trafilatura_eval, which has snippets and no main text, is never trained on).

Exit status 2 when ../shared/realhtml is missing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from extract_pages import DEFAULT_DIR, TOKEN, load_pages, mean, prf, tokens  # noqa: E402

from stages.blocks import (  # noqa: E402
    MODEL_PATH,
    BlockModel,
    Network,
    blocks,
    features,
    main_content_markup,
    second_pass_features,
)

HIDDEN = 16
STEPS = 300
LEARNING_RATE = 0.01
L2 = 1e-4
THRESHOLDS = tuple(round(0.30 + 0.05 * i, 2) for i in range(9))


def labels(texts: list[str], main_text: str) -> np.ndarray:
    expected = TOKEN.findall(main_text.lower())
    joined = " " + " ".join(expected) + " "
    present = set(expected)
    out = []
    for text in texts:
        found = TOKEN.findall(text.lower())
        if not found:
            out.append(0.0)
        elif " " + " ".join(found) + " " in joined:
            out.append(1.0)
        else:
            out.append(float(len(found) >= 8 and sum(token in present for token in found) >= 0.8 * len(found)))
    return np.array(out)


def prepare(pages: list[dict]) -> list[dict]:
    """Per page with a main text: its blocks' token counts, features, labels and weights (no blocks where
    resiliparse finds no text or the page is too large to extract: those score 0 and train nothing)."""
    prepared = []
    for page in pages:
        if not page["expected"]:
            continue
        texts, rows = blocks(main_content_markup(page["html"])) if page["html"] is not None else ([], [])
        if not texts:
            prepared.append(dict(dataset=page["dataset"], expected=page["expected"], counts=[]))
            continue
        counts = [tokens(text) for text in texts]
        weights = np.array([sum(c.values()) + 1.0 for c in counts])
        prepared.append(
            dict(
                dataset=page["dataset"],
                expected=page["expected"],
                counts=counts,
                features=features(rows),
                labels=labels(texts, page["main_text"]),
                weights=weights / weights.sum(),
            )
        )
    return prepared


def fit(matrix: np.ndarray, target: np.ndarray, weights: np.ndarray) -> Network:
    """A one-hidden-layer network minimizing the weighted log loss (+ L2), by full-batch Adam."""
    mean_ = matrix.mean(axis=0)
    scale = matrix.std(axis=0)
    mean_[0], scale[0] = 0.0, 1.0  # the bias column
    scale[scale == 0] = 1.0
    inputs = (matrix - mean_) / scale
    rng = np.random.default_rng(0)
    params = [
        rng.normal(0.0, 1.0 / np.sqrt(inputs.shape[1]), (inputs.shape[1], HIDDEN)),
        np.zeros(HIDDEN),
        rng.normal(0.0, 1.0 / np.sqrt(HIDDEN), HIDDEN),
        np.zeros(1),
    ]
    first = [np.zeros_like(p) for p in params]
    second = [np.zeros_like(p) for p in params]
    weights = weights / weights.sum()
    for step in range(1, STEPS + 1):
        hidden_weights, hidden_bias, output_weights, output_bias = params
        hidden = np.tanh(inputs @ hidden_weights + hidden_bias)
        predicted = 1.0 / (1.0 + np.exp(-(hidden @ output_weights + output_bias[0])))
        error = weights * (predicted - target)
        back = np.outer(error, output_weights) * (1.0 - hidden * hidden)
        grads = [
            inputs.T @ back + L2 * hidden_weights,
            back.sum(axis=0),
            hidden.T @ error + L2 * output_weights,
            np.array([error.sum()]),
        ]
        for k, grad in enumerate(grads):
            first[k] = 0.9 * first[k] + 0.1 * grad
            second[k] = 0.999 * second[k] + 0.001 * grad * grad
            params[k] = params[k] - LEARNING_RATE * (first[k] / (1 - 0.9**step)) / (
                np.sqrt(second[k] / (1 - 0.999**step)) + 1e-8
            )
    return Network(mean_, scale, params[0], params[1], params[2], float(params[3][0]))


def page_f1(page: dict, model: BlockModel, threshold: float | None = None) -> float:
    if not page["counts"]:
        return 0.0
    scores = model.second(second_pass_features(page["features"], model.first(page["features"])))
    return f1_at(page, scores, model.threshold if threshold is None else threshold)


def kept_blocks(scores: np.ndarray, threshold: float) -> np.ndarray:
    """Which blocks BlockModel.select keeps: those scoring `threshold`, or all when none does."""
    keep = scores >= threshold
    return keep if keep.any() else np.ones_like(keep)


def f1_at(page: dict, scores: np.ndarray, threshold: float) -> float:
    keep = kept_blocks(scores, threshold)
    kept: Counter = Counter()
    for count, kept_block in zip(page["counts"], keep):
        if kept_block:
            kept.update(count)
    return prf(kept, page["expected"])[2]


def train(pages: list[dict]) -> BlockModel:
    pages = [p for p in pages if p["counts"]]
    matrix = np.vstack([p["features"] for p in pages])
    target = np.concatenate([p["labels"] for p in pages])
    weights = np.concatenate([p["weights"] for p in pages])
    first = fit(matrix, target, weights)
    second_matrix = np.vstack([second_pass_features(p["features"], first(p["features"])) for p in pages])
    second = fit(second_matrix, target, weights)
    model = BlockModel(first, second, 0.5)
    scores = [model.second(second_pass_features(p["features"], first(p["features"]))) for p in pages]
    model.threshold = max(
        THRESHOLDS, key=lambda t: (mean([f1_at(p, s, t) for p, s in zip(pages, scores)]), -abs(t - 0.5))
    )
    return model


def held_out(pages: list[dict]) -> dict[str, tuple[float, list[float]]]:
    """For each dataset: (threshold chosen, F1 per page) of a model trained on the other datasets."""
    results = {}
    for dataset in sorted({p["dataset"] for p in pages}):
        model = train([p for p in pages if p["dataset"] != dataset])
        results[dataset] = (model.threshold, [page_f1(p, model) for p in pages if p["dataset"] == dataset])
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--held-out", action="store_true", help="score leaving each dataset out in turn")
    parser.add_argument("--write", action="store_true", help=f"train on all and write {MODEL_PATH.name}")
    args = parser.parse_args(argv)
    if not (args.data / "ground_truth.jsonl").is_file():
        print(f"train_extractor: no benchmark data at {args.data}", file=sys.stderr)
        return 2
    started = time.process_time()
    pages = prepare(load_pages(args.data, None))
    print(f"{len(pages)} pages, {sum(len(p['counts']) for p in pages)} blocks", flush=True)
    if args.held_out:
        results = held_out(pages)
        print("| held-out dataset | pages | threshold | F1 |\n|---|---:|---:|---:|")
        for dataset, (threshold, f1) in results.items():
            print(f"| {dataset} | {len(f1)} | {threshold:.2f} | {mean(f1):.3f} |")
        every = [x for _, f1 in results.values() for x in f1]
        print(f"| all | {len(every)} | | **{mean(every):.3f}** |", flush=True)
    if args.write:
        model = train(pages)
        data = model.to_json()
        data["trained_on"] = sorted({p["dataset"] for p in pages})
        data["pages"] = len(pages)
        MODEL_PATH.write_text(json.dumps(data, indent=0) + "\n", encoding="utf-8")
        print(f"wrote {MODEL_PATH} (threshold {model.threshold:.2f})")
    print(f"{time.process_time() - started:.0f} CPU-s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
