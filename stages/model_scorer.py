"""A transformer scorer: a local Hugging Face sequence-classification model (a FineWeb-Edu-style regression head,
or a classifier) scores each document, the way NeMo Curator's and FineWeb-Edu's GPU classifiers run.

Texts are cut to `max_chars`, tokenized on the CPU to at most `max_tokens`, sorted by length and padded per
batch (a batch of short documents does not pay for a long one's padding), then the model runs in fp32 on a
CPU or under bf16 autocast on a GPU. The model loads once per process: on Ray that process is one actor of the
step's pool (pipeline/filtering.py), which keeps it for every file it scores.
"""

from __future__ import annotations

import contextlib
import os

import pyarrow as pa

from . import model_files
from .ledger import run_on_alive
from .stamps import file_stamp
from .classifier import shown
from .tokenizer_child import tokenize_in_child
from .user import StageError

EXTRA = "the transformers scorer needs the classify extra: .venv/bin/python -m pip install -e '.[classify]'"
_LOADED: dict[tuple, tuple] = {}  # (model folder, device, its files' stamps) -> (tokenizer, model), once per process


def model_head(model_dir: str) -> tuple[list[str], str]:
    """The label names of a model folder's config.json (checked: stages/model_files.py), and its problem type:
    regression (one output), multi_label_classification or single_label."""
    config = model_files.read_config(model_dir)
    return model_files.labels_of(config)


def added_columns(name: str, model_dir: str) -> dict[str, pa.DataType]:
    """score_NAME, and label_NAME (a classifier's most likely label) or int_score_NAME (a regression's score,
    rounded)."""
    _, problem = model_head(model_dir)
    extra = {f"int_score_{name}": pa.int64()} if problem == "regression" else {f"label_{name}": pa.string()}
    return {f"score_{name}": pa.float64(), **extra}


def folder_stamp(model_dir: str) -> tuple:
    """Every file of a model folder with its size and time: a file copied over another loads the new model."""
    names = sorted(os.listdir(model_dir)) if os.path.isdir(model_dir) else []
    return tuple(file_stamp(os.path.join(model_dir, name)) for name in names)


def load_tokenizer(model_dir: str):
    """A checked folder's tokenizer (nothing in the folder runs: trust_remote_code=False); one without a pad
    token pads with its end token. StageError (one line) when the folder may not or does not load."""
    from transformers import AutoTokenizer

    with _one_line(model_dir):
        rows = model_files.check_model_folder(model_dir)
        # local_files_only: a folder on disk, never a download
        tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True, trust_remote_code=False)
        model_files.pad_with_end_token(tokenizer)
        model_files.check_token_ids(tokenizer, rows)
    return tokenizer


def load_model(model_dir: str):
    """(tokenizer, model) of a checked folder: nothing it declares is allocated before its weights are compared
    with it (stages/model_files.py)."""
    from transformers import AutoModelForSequenceClassification

    tokenizer = load_tokenizer(model_dir)
    with _one_line(model_dir):
        model = AutoModelForSequenceClassification.from_pretrained(
            model_dir, local_files_only=True, trust_remote_code=False, use_safetensors=True
        )
    if model.config.pad_token_id is None:  # a decoder classifier reads the last token that is not padding
        model.config.pad_token_id = tokenizer.pad_token_id
    return tokenizer, model


@contextlib.contextmanager
def _one_line(model_dir: str):
    try:
        yield
    except model_files.ModelFolderError as error:
        raise StageError(f"the model in {model_dir} may not load: {error}") from None
    except Exception as error:  # broken weights or tokenizer files: one line (cli.stage_error), not a traceback
        first = str(error).strip().split("\n")[0]
        raise StageError(f"the model in {model_dir} does not load: {type(error).__name__}: {first}") from None


class TransformerScorer:
    """score(texts) -> (scores, labels or rounded scores). A classifier's score is the probability of `label`
    (default: its last label, the positive one of two): a softmax over the labels, or each label's sigmoid for a
    multi-label head; a regression head's score is its output. With `timeout_s`, each text is tokenized in a child
    process under that limit (stages/tokenizer_child.py)."""

    def __init__(
        self,
        model_dir: str,
        label: str | None = None,
        max_chars: int = 10_000,
        max_tokens: int = 512,
        batch_size: int = 32,
        device: str = "cpu",
        threads: int = 1,
        timeout_s: float | None = None,
    ):
        self.model_dir = str(model_dir)
        self.labels, self.problem = model_head(self.model_dir)
        self.regression = self.problem == "regression"
        self.label_index = len(self.labels) - 1 if label is None else self.labels.index(label)
        self.max_chars = max_chars
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.device = device
        self.threads = threads
        self.timeout_s = timeout_s

    def _load(self):
        key = (self.model_dir, self.device, folder_stamp(self.model_dir))
        if key not in _LOADED:
            import torch
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()  # a worker's stderr is the run's console
            if self.device == "cpu":
                # The same threads on every engine: a matrix product's sums, and so the scores' last bits,
                # depend on how many threads split it (Ray and Spark set OMP_NUM_THREADS each their own way).
                torch.set_num_threads(self.threads)
            tokenizer, model = load_model(self.model_dir)
            _LOADED[key] = (tokenizer, model.float().train(False).to(self.device))  # inference: no dropout
        return _LOADED[key]

    def max_length(self) -> int:
        """Tokens per text: max_tokens, at most the positions of both the tokenizer and the model."""
        tokenizer, model = self._load()
        return min(self.max_tokens, model_files.position_limit(tokenizer, model.config))

    def tokenize_each(self, texts: list[str]) -> list[list[int] | tuple[str, str]]:
        """Each text's token ids, or (reason, detail) for one its tokenizer did not finish (timeout_s only)."""
        tokenizer, _ = self._load()
        cut = [text[: self.max_chars] for text in texts]
        if not self.timeout_s:
            return tokenizer(cut, truncation=True, max_length=self.max_length())["input_ids"]
        settings = {
            "folder": self.model_dir,
            "max_length": self.max_length(),
            "stamp": repr(folder_stamp(self.model_dir)),
        }
        return tokenize_in_child(settings, cut, self.timeout_s)

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        tokenizer, _ = self._load()
        return tokenizer([text[: self.max_chars] for text in texts], truncation=True, max_length=self.max_length())[
            "input_ids"
        ]

    def logits(self, texts: list[str]):
        """The model's outputs, a row per text (a float32 tensor)."""
        return self.logits_of(self.tokenize(texts))

    def logits_of(self, ids: list):
        """The outputs for token ids, a row per text; NaN for a text without ids (its tokenizer failed)."""
        import torch

        tokenizer, model = self._load()
        done = [i for i in range(len(ids)) if isinstance(ids[i], list)]
        order = sorted(done, key=lambda i: len(ids[i]))  # stable: the same batches on every run
        outputs = torch.full((len(ids), len(self.labels)), float("nan"))
        for start in range(0, len(order), self.batch_size):
            chosen = order[start : start + self.batch_size]
            batch = tokenizer.pad({"input_ids": [ids[i] for i in chosen]}, return_tensors="pt").to(self.device)
            with torch.inference_mode(), torch.autocast("cuda", torch.bfloat16, enabled=self.device != "cpu"):
                outputs[chosen] = model(**batch).logits.float().cpu()
        return outputs

    def score(self, texts: list[str]) -> tuple[list[float], list]:
        return self.scores_of(self.logits(texts))

    def scores_of(self, outputs) -> tuple[list[float], list]:
        import torch

        if self.regression:
            scores = outputs[:, 0].tolist()
            return scores, [None if score != score else round(score) for score in scores]
        if self.problem == "multi_label_classification":  # each label its own yes or no
            probabilities = torch.sigmoid(outputs)
        else:
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
        ids = self.scorer.tokenize_each([text or "" for text in alive["text"].to_pylist()])
        computed, rounded = self.scorer.scores_of(self.scorer.logits_of(ids))
        failed = [None if isinstance(each, list) else each for each in ids]  # (reason, detail) of a text not tokenized
        scores = [None if f else s for f, s in zip(failed, computed)]
        second = [None if f else s for f, s in zip(failed, rounded)]
        reasons: list = [f and f"{self.name}:{f[0]}" for f in failed]
        details: list = [f and f[1] for f in failed]
        if self.threshold is not None:
            for i, s in enumerate(scores):
                if s is not None and not s >= self.threshold:  # a NaN score too
                    reasons[i], details[i] = f"{self.name}:below_threshold", f"score {shown(s)} < {self.threshold}"
        score_column, second_column = self.columns
        if self.threshold is None and not any(reasons):
            return {score_column: scores, second_column: second}, None, None
        return {score_column: scores, second_column: second}, reasons, details
