"""Model scorers' speed: documents per CPU-second of crawlbelt's transformers scorer against a plain
`transformers` loop over the same model and documents, in one run, and of the fastText scorer.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_scorer.py [--docs 400] [--layers 4] [--hidden 256]

Documents: the main texts of ../shared/realhtml's pages (ground truth), in file order, cut as the scorer cuts
them (10,000 characters, then 512 tokens). The model: a BERT of the given shape with random weights (speed
does not depend on the weights) and a WordPiece tokenizer trained on the documents, saved as
save_pretrained writes it. One process, torch on one thread, pinned to one core; CPU seconds are
time.process_time. Compared, each on every document:
  - crawlbelt: stages.model_scorer.TransformerScorer (texts sorted by token count, padded per batch of 32);
  - plain, batched: the loop a user writes, batches of 32 in document order, each padded to its longest;
  - plain, one by one: each document's own forward pass (no padding at all).
The scores of the three agree to float tolerance (checked here on every document).
fastText: stages.classifier.FastTextClassifier with a model train-classifier made from the same documents
(English against the rest), documents per CPU-second.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # tiny_models: the BERT builder the tests use

REALHTML = ROOT.parent / "shared" / "realhtml" / "ground_truth.jsonl"
BATCH = 32


def documents(count: int) -> list[dict]:
    pages = [json.loads(line) for line in REALHTML.read_text().split("\n")[:-1]]
    return [page for page in pages if page.get("main_text")][:count]


def bert_folder(folder: Path, texts: list[str], layers: int, hidden: int, heads: int, positions: int = 512) -> Path:
    """A regression BERT of this shape, random weights, with a WordPiece tokenizer trained on `texts` (30,522 ids
    at most, BERT's own vocabulary size), saved as save_pretrained writes them."""
    import torch
    from transformers import BertForSequenceClassification

    from tiny_models import bert_parts

    tokenizer, config = bert_parts(texts, {0: "score"}, "regression", 30_522, hidden, layers, heads, positions)
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def plain_batched(folder: Path, texts: list[str]) -> list[float]:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(folder, local_files_only=True).train(False)
    scores: list[float] = []
    with torch.inference_mode():
        for start in range(0, len(texts), BATCH):
            batch = [text[:10_000] for text in texts[start : start + BATCH]]
            encoded = tokenizer(batch, truncation=True, max_length=512, padding=True, return_tensors="pt")
            scores += model(**encoded).logits[:, 0].tolist()
    return scores


def plain_alone(folder: Path, texts: list[str]) -> list[float]:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(folder, local_files_only=True).train(False)
    with torch.inference_mode():
        return [
            float(model(**tokenizer(t[:10_000], truncation=True, max_length=512, return_tensors="pt")).logits[0, 0])
            for t in texts
        ]


def timed(run) -> tuple[float, Any]:
    started = time.process_time()
    result = run()
    return time.process_time() - started, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=400)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    args = parser.parse_args()
    if not REALHTML.exists():
        print(f"bench_scorer: {REALHTML} not found", file=sys.stderr)
        return 2
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    import torch
    from transformers.utils import logging as transformers_logging

    torch.set_num_threads(1)
    transformers_logging.disable_progress_bar()
    from stages.classifier import FastTextClassifier
    from stages.model_scorer import TransformerScorer

    pages = documents(args.docs)
    texts = [page["main_text"] for page in pages]
    work = Path(tempfile.mkdtemp(prefix="bench_scorer_"))
    folder = bert_folder(work / "bert", texts, args.layers, args.hidden, args.heads)
    scorer = TransformerScorer(str(folder), batch_size=BATCH)
    scorer.score(texts[:2])  # loaded once, as an actor does, before the clock
    ours_s, (ours, _) = timed(lambda: scorer.score(texts))
    batched_s, batched = timed(lambda: plain_batched(folder, texts))
    alone_s, alone = timed(lambda: plain_alone(folder, texts))
    worst = max(max(abs(a - b), abs(a - c)) for a, b, c in zip(ours, batched, alone))
    tokens = sum(len(ids) for ids in scorer.tokenize(texts))

    # fastText: a model train-classifier makes from the same texts, English against the rest.
    english = [p["main_text"].replace("\n", " ") for p in pages if p.get("lang") == "en"]
    rest = [p["main_text"].replace("\n", " ") for p in pages if p.get("lang") != "en"]
    (work / "en.txt").write_text("\n".join(english) + "\n")
    (work / "rest.txt").write_text("\n".join(rest) + "\n")
    subprocess.run(
        [sys.executable, "-m", "pipeline", "train-classifier", "--kind", "fasttext", "--out", str(work / "ft"),
         "--positive", str(work / "en.txt"), "--negative", str(work / "rest.txt")],
        check=True, cwd=ROOT, capture_output=True,
    )  # fmt: skip
    fasttext = FastTextClassifier(work / "ft" / "model.bin", "__label__hq")
    fasttext.score(texts[0])
    fasttext_s, _ = timed(lambda: [fasttext.score(text) for text in texts])

    rows = {
        "crawlbelt transformers scorer (sorted, padded per batch)": ours_s,
        "plain transformers, batches in document order": batched_s,
        "plain transformers, one document at a time": alone_s,
    }
    print(
        f"{len(texts)} documents, {tokens:,} tokens after the cut; BERT {args.layers} layers x {args.hidden}, "
        f"random weights; one core, one thread; largest score difference {worst:.2e}"
    )
    print("| scorer | CPU-s | documents per CPU-second | crawlbelt's speed-up |")
    print("|---|---:|---:|---:|")
    for name, seconds in rows.items():
        print(f"| {name} | {seconds:.2f} | {len(texts) / seconds:.1f} | {seconds / ours_s:.2f}x |")
    print(f"| fastText scorer (train-classifier's model) | {fasttext_s:.3f} | {len(texts) / fasttext_s:,.0f} | |")
    return 0 if worst < 1e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
