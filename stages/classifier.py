"""Model-based quality scores: a tiny naive Bayes over words, or a fastText supervised model.

Both expose `score(text) -> float`; `ClassifierScore` is the stage that writes the score and, given a
threshold, rejects what falls below it. `CombineScores` makes one score of several (an ensemble). The
transformers scorer is stages/model_scorer.py.
"""

from __future__ import annotations

import math
from collections import Counter
from itertools import repeat
from pathlib import Path

import numpy as np
import pyarrow as pa

from .langid import fasttext_predict, load_fasttext_model
from .ledger import run_on_alive


class NaiveBayes:
    """Two-class multinomial naive Bayes with add-one smoothing; score = sum of log-likelihood ratios.

    Holds only a dict word -> vote, so it pickles small and scores with one lookup per word.
    """

    def __init__(self, votes: dict[str, float], n_good: int, n_bad: int):
        self.votes = votes
        self.n_good = n_good
        self.n_bad = n_bad
        self.vocabulary_size = len(votes)

    @classmethod
    def train(cls, good_texts, bad_texts) -> NaiveBayes:
        good = Counter(w for t in good_texts for w in t.lower().split())
        bad = Counter(w for t in bad_texts for w in t.lower().split())
        n_good, n_bad = sum(good.values()), sum(bad.values())
        vocabulary = good.keys() | bad.keys()
        v = len(vocabulary)
        # log P(w|good) / P(w|bad) with P(w|c) = (count_c(w) + 1) / (N_c + V)
        votes = {w: math.log((good[w] + 1) / (n_good + v)) - math.log((bad[w] + 1) / (n_bad + v)) for w in vocabulary}
        return cls(votes, n_good, n_bad)

    @classmethod
    def from_files(cls, good_files, bad_files) -> NaiveBayes:
        """Train from text files holding one example per non-blank line."""
        return cls.train(_read_examples(good_files), _read_examples(bad_files))

    def vote(self, word: str) -> float:
        """The word's log-likelihood ratio; 0 for a word never seen in training."""
        return self.votes.get(word.lower(), 0.0)

    def score(self, text: str) -> float:
        # map(dict.get, words, zeros) runs the lookups in C; the sum adds the same votes in the same order.
        return sum(map(self.votes.get, (text or "").lower().split(), repeat(0.0)))


def _read_examples(files) -> list[str]:
    if isinstance(files, (str, Path)):
        files = [files]
    return [line.strip() for f in files for line in Path(f).read_text(encoding="utf-8").splitlines() if line.strip()]


class FastTextClassifier:
    """Probability a fastText supervised model gives `label` (e.g. "__label__hq")."""

    def __init__(self, model_path, label: str):
        self.model_path = str(model_path)  # the model loads lazily, once per worker process
        self.label = label.removeprefix("__label__")

    def score(self, text: str) -> float:
        model = load_fasttext_model(self.model_path)
        # k=-1 asks for every label, so the wanted one is there even when it is not the top answer.
        for label, prob in fasttext_predict(model, text or "", -1):
            if label == self.label:
                return prob
        return 0.0


def shown(score: float) -> str:
    """A score in a reject's detail: three decimals, or NaN."""
    return "NaN" if score != score else f"{score:.3f}"


class ClassifierScore:
    """Adds a score column (`quality_score` for the belt's `classifier`, `score_NAME` for a named scorer);
    rejects `NAME:below_threshold` when a threshold is set."""

    def __init__(self, model, threshold=None, name: str = "classifier", column: str = "quality_score"):
        self.model = model
        self.threshold = threshold
        self.name = name
        self.column = column

    def __call__(self, batch: pa.Table) -> pa.Table:
        return run_on_alive(batch, self.name, self._compute, {self.column: pa.float64()})

    def _compute(self, alive: pa.Table):
        scores = [float(self.model.score(text or "")) for text in alive["text"].to_pylist()]
        reasons = details = None
        if self.threshold is not None:
            below = [not s >= self.threshold for s in scores]  # a NaN score is not kept
            reasons = [f"{self.name}:below_threshold" if b else None for b in below]
            details = [f"score {shown(s)} < {self.threshold}" if b else None for b, s in zip(below, scores)]
        return {self.column: pa.array(scores, pa.float64())}, reasons, details


class CombineScores:
    """`score_NAME`: the max, mean or min of earlier scorers' columns (an ensemble); rejects
    `NAME:below_threshold` below a threshold."""

    def __init__(self, name: str, scores: list[str], how: str = "max", threshold: float | None = None):
        self.name = name
        self.scores = scores
        self.how = how
        self.threshold = threshold

    def __call__(self, batch: pa.Table) -> pa.Table:
        return run_on_alive(batch, self.name, self._compute, {f"score_{self.name}": pa.float64()})

    def _compute(self, alive: pa.Table):
        columns = np.column_stack([alive[name].to_numpy(zero_copy_only=False).astype(float) for name in self.scores])
        combined = getattr(np, self.how)(columns, axis=1)  # np.max, np.mean or np.min of each row
        reasons = details = None
        if self.threshold is not None:
            below = ~(combined >= self.threshold)  # a NaN (a user stage's missing score) is not kept
            reasons = [f"{self.name}:below_threshold" if b else None for b in below]
            details = [f"{self.how} {c:.3f} < {self.threshold}" if b else None for b, c in zip(below, combined)]
        return {f"score_{self.name}": pa.array(combined, pa.float64())}, reasons, details
