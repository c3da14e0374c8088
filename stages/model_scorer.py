"""A transformer scorer: a local Hugging Face sequence-classification model (a FineWeb-Edu-style regression head,
or a classifier) scores each document, the way NeMo Curator's and FineWeb-Edu's GPU classifiers run.

Texts are cut to `max_chars`, tokenized on the CPU to at most `max_tokens`, sorted by length and padded per
batch (a batch of short documents does not pay for a long one's padding), then the model runs in fp32 on a
CPU or under bf16 autocast on a GPU. The model loads once per process: on Ray that process is one actor of the
step's pool (pipeline/filtering.py), which keeps it for every file it scores.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from .ledger import run_on_alive
from .user import StageError

EXTRA = "the transformers scorer needs the classify extra: .venv/bin/python -m pip install -e '.[classify]'"
_LOADED: dict[tuple[str, str], tuple] = {}  # (model folder, device) -> (tokenizer, model), once per process


def model_head(model_dir: str) -> tuple[list[str], bool]:
    """The label names of a model folder's config.json, and whether its head is a regression (one output)."""
    config = json.loads((Path(model_dir) / "config.json").read_text())
    id2label = config.get("id2label") or {str(i): f"LABEL_{i}" for i in range(config.get("num_labels", 2))}
    labels = [id2label[key] for key in sorted(id2label, key=int)]
    regression = config.get("problem_type") == "regression" or len(labels) == 1
    return labels, regression


def added_columns(name: str, model_dir: str) -> dict[str, pa.DataType]:
    """score_NAME, and label_NAME (a classifier's most likely label) or int_score_NAME (a regression's score,
    rounded)."""
    _, regression = model_head(model_dir)
    extra = {f"int_score_{name}": pa.int64()} if regression else {f"label_{name}": pa.string()}
    return {f"score_{name}": pa.float64(), **extra}


class TransformerScorer:
    """score(texts) -> (scores, labels or rounded scores). A classifier's score is the probability of `label`
    (default: its last label, the positive one of two); a regression head's score is its output."""

    def __init__(
        self,
        model_dir: str,
        label: str | None = None,
        max_chars: int = 10_000,
        max_tokens: int = 512,
        batch_size: int = 32,
        device: str = "cpu",
        threads: int = 1,
    ):
        self.model_dir = str(model_dir)
        self.labels, self.regression = model_head(self.model_dir)
        self.label_index = len(self.labels) - 1 if label is None else self.labels.index(label)
        self.max_chars = max_chars
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.device = device
        self.threads = threads

    def _load(self):
        key = (self.model_dir, self.device)
        if key not in _LOADED:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()  # a worker's stderr is the run's console
            if self.device == "cpu":
                # The same threads on every engine: a matrix product's sums, and so the scores' last bits,
                # depend on how many threads split it (Ray and Spark set OMP_NUM_THREADS each their own way).
                torch.set_num_threads(self.threads)

            try:  # local_files_only: a folder on disk, never a download
                tokenizer = AutoTokenizer.from_pretrained(self.model_dir, local_files_only=True)
                model = AutoModelForSequenceClassification.from_pretrained(self.model_dir, local_files_only=True)
            except Exception as error:  # broken weights or tokenizer files: one line (cli.stage_error), not a traceback
                first = str(error).strip().split("\n")[0]
                raise StageError(
                    f"the model in {self.model_dir} does not load: {type(error).__name__}: {first}"
                ) from None
            _LOADED[key] = (tokenizer, model.float().train(False).to(self.device))  # inference: no dropout
        return _LOADED[key]

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        tokenizer, model = self._load()
        # No more tokens than the model has positions for (a tokenizer without a limit says 1e30).
        limit = tokenizer.model_max_length if tokenizer.model_max_length < 1e6 else model.config.max_position_embeddings
        cut = [text[: self.max_chars] for text in texts]
        return tokenizer(cut, truncation=True, max_length=min(self.max_tokens, limit))["input_ids"]

    def logits(self, texts: list[str]):
        """The model's outputs, a row per text (a float32 tensor)."""
        import torch

        tokenizer, model = self._load()
        ids = self.tokenize(texts)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))  # stable: the same batches on every run
        outputs = torch.zeros((len(ids), len(self.labels)))
        for start in range(0, len(order), self.batch_size):
            chosen = order[start : start + self.batch_size]
            batch = tokenizer.pad({"input_ids": [ids[i] for i in chosen]}, return_tensors="pt").to(self.device)
            with torch.inference_mode(), torch.autocast("cuda", torch.bfloat16, enabled=self.device != "cpu"):
                outputs[chosen] = model(**batch).logits.float().cpu()
        return outputs

    def score(self, texts: list[str]) -> tuple[list[float], list]:
        import torch

        outputs = self.logits(texts)
        if self.regression:
            scores = outputs[:, 0].tolist()
            return scores, [round(score) for score in scores]
        probabilities = torch.softmax(outputs, dim=1)
        labels = [self.labels[i] for i in probabilities.argmax(dim=1).tolist()]
        return probabilities[:, self.label_index].tolist(), labels


class TransformerScore:
    """The stage: adds `score_NAME` and `label_NAME` or `int_score_NAME`; rejects `NAME:below_threshold`
    below a threshold."""

    def __init__(self, scorer: TransformerScorer, name: str, threshold: float | None = None):
        self.scorer = scorer
        self.name = name
        self.threshold = threshold
        self.columns = added_columns(name, scorer.model_dir)

    def __call__(self, batch: pa.Table) -> pa.Table:
        return run_on_alive(batch, self.name, self._compute, self.columns)

    def _compute(self, alive: pa.Table):
        scores, second = self.scorer.score([text or "" for text in alive["text"].to_pylist()])
        score_column, second_column = self.columns
        reasons = details = None
        if self.threshold is not None:
            reasons = [f"{self.name}:below_threshold" if s < self.threshold else None for s in scores]
            details = [f"score {s:.3f} < {self.threshold}" if s < self.threshold else None for s in scores]
        return {score_column: scores, second_column: second}, reasons, details
