"""A transformer scorer: a local Hugging Face sequence-classification model (a FineWeb-Edu-style regression head,
or a classifier) scores each document, the way NeMo Curator's and FineWeb-Edu's GPU classifiers run.

Texts are cut to `max_chars`, tokenized on the CPU to at most `max_tokens`, sorted by length and padded per
batch (a batch of short documents does not pay for a long one's padding), then the model runs in fp32 on a
CPU or under bf16 autocast on a GPU. Padding goes on the right, whatever side the tokenizer was saved with, with
the attention mask: each text keeps the positions it has alone (left padding shifts BERT's and GPT-2's absolute
positions), and the pad id is the one the model's config names, the id a decoder's head skips to find a text's
last token (GPT2ForSequenceClassification, Llama's): a text's score does not depend on its batch. The model loads once per process: on Ray that process is one actor of the
step's pool (pipeline/passes/filtering.py), which keeps it for every file it scores.
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
    clamped to `int_range` and rounded: int_score)."""
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
    text_config = model.config.get_text_config()  # where the heads read pad_token_id (GPT-2's: the config)
    if text_config.pad_token_id is None:  # a decoder's head reads the last token that is not padding
        text_config.pad_token_id = tokenizer.pad_token_id
    return tokenizer, model


def pad_id(model) -> int:
    """The id the batches are padded with: the pad token of the model's config (load_model sets the tokenizer's
    where it names none), which a decoder's head skips to find each text's last token."""
    return model.config.get_text_config().pad_token_id


INT_SCORE_LIMIT = 2**62  # an int score's bound: within int64, and an int_range's bounds within it


def int_score(score: float, int_range: tuple[int, int] | None = None) -> int | None:
    """A regression score as a whole number: clamped to `int_range` when given, then rounded as Python rounds
    (half to even: 2.5 is 2). With int_range (0, 5) it is FineWeb-Edu's `int(round(max(0, min(score, 5))))`
    (huggingface/cosmopedia classification/run_edu_bert.py). None for a NaN score, and, without a range, for an
    infinite one or one past INT_SCORE_LIMIT (no whole number, or none the int64 column holds)."""
    if score != score:
        return None
    if int_range is not None:
        low, high = int_range
        score = max(low, min(score, high))
    if not -INT_SCORE_LIMIT <= score <= INT_SCORE_LIMIT:
        return None
    return int(round(score))


def right_padded(rows: list[list[int]], pad_id: int) -> dict:
    """Token id rows padded on the right to the longest with `pad_id`, and their attention mask (1 on a text's
    own tokens): a text's tokens keep positions 0..n-1, and a causal model's last token sees no padding."""
    import torch

    width = max(len(row) for row in rows)
    return {
        "input_ids": torch.tensor([row + [pad_id] * (width - len(row)) for row in rows], dtype=torch.long),
        "attention_mask": torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in rows], dtype=torch.long),
    }


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
    """score(texts) -> (scores, labels or int scores). A classifier's score is the probability of `label`
    (default: its last label, the positive one of two): a softmax over the labels, or each label's sigmoid for a
    multi-label head; a regression head's score is its output, and its int score int_score(score, int_range).
    With `timeout_s`, each text is tokenized in a child process under that limit (stages/tokenizer_child.py)."""

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
        int_range: tuple[int, int] | None = None,
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
        self.int_range = int_range

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
        """The outputs for token ids, a row per text; NaN for a text without ids (its tokenizer failed, or gave
        none: an empty text, where the tokenizer adds no special token)."""
        import torch

        _, model = self._load()
        done = [i for i in range(len(ids)) if isinstance(ids[i], list) and ids[i]]
        order = sorted(done, key=lambda i: len(ids[i]))  # stable: the same batches on every run
        outputs = torch.full((len(ids), len(self.labels)), float("nan"))
        for start in range(0, len(order), self.batch_size):
            chosen = order[start : start + self.batch_size]
            rows = [ids[i] for i in chosen]
            batch = {key: value.to(self.device) for key, value in right_padded(rows, pad_id(model)).items()}
            with torch.inference_mode(), torch.autocast("cuda", torch.bfloat16, enabled=self.device != "cpu"):
                outputs[chosen] = model(**batch).logits.float().cpu()
        return outputs

    def score(self, texts: list[str]) -> tuple[list[float], list]:
        return self.scores_of(self.logits(texts))

    def scores_of(self, outputs) -> tuple[list[float], list]:
        import torch

        if self.regression:
            scores = outputs[:, 0].tolist()
            return scores, [int_score(score, self.int_range) for score in scores]
        if self.problem == "multi_label_classification":  # each label its own yes or no
            probabilities = torch.sigmoid(outputs)
        else:
            probabilities = torch.softmax(outputs, dim=1)
        labels = [self.labels[i] for i in probabilities.argmax(dim=1).tolist()]
        return probabilities[:, self.label_index].tolist(), labels


class TransformerScore:
    """The stage: adds `score_NAME` and `label_NAME` or `int_score_NAME`; rejects `NAME:below_threshold` where
    the score is below `threshold`, or the int score below `int_threshold` (FineWeb-Edu's `int_score >= 3`), and
    `NAME:no_tokens` where the tokenizer gave a text no token (nothing to score)."""

    def __init__(
        self, scorer: TransformerScorer, name: str, threshold: float | None = None, int_threshold: int | None = None
    ):
        self.scorer = scorer
        self.name = name
        self.threshold = threshold
        self.int_threshold = int_threshold
        self.columns = added_columns(name, scorer.model_dir)

    def __call__(self, batch: pa.Table) -> pa.Table:
        return run_on_alive(batch, self.name, self._compute, self.columns)

    def _compute(self, alive: pa.Table):
        ids = self.scorer.tokenize_each([text or "" for text in alive["text"].to_pylist()])
        computed, rounded = self.scorer.scores_of(self.scorer.logits_of(ids))
        failed = [not_scored(each) for each in ids]  # (reason, detail) of a text not tokenized, or without tokens
        scores = [None if f else s for f, s in zip(failed, computed)]
        second = [None if f else s for f, s in zip(failed, rounded)]
        reasons: list = [f and f"{self.name}:{f[0]}" for f in failed]
        details: list = [f and f[1] for f in failed]
        for i, (score, whole) in enumerate(zip(computed, rounded)):
            below = None if failed[i] else self.below(score, whole)
            if below:
                reasons[i], details[i] = f"{self.name}:below_threshold", below
        score_column, second_column = self.columns
        if self.threshold is None and self.int_threshold is None and not any(reasons):
            return {score_column: scores, second_column: second}, None, None
        return {score_column: scores, second_column: second}, reasons, details

    def below(self, score: float, whole: int | None) -> str | None:
        """Why a scored text is rejected (its score under `threshold`, a NaN too; or its int score under
        `int_threshold`, a NaN score's none too), else None."""
        if self.threshold is not None and not score >= self.threshold:
            return f"score {shown(score)} < {self.threshold}"
        if self.int_threshold is None:
            return None
        if whole is None:
            return f"score {shown(score)} has no int_score (int_threshold {self.int_threshold})"
        return (
            f"int_score {whole} < {self.int_threshold} (score {shown(score)})" if whole < self.int_threshold else None
        )


def not_scored(ids) -> tuple[str, str] | None:
    """(reason, detail) for a text the model cannot score: its tokenizer failed (timeout_s), or gave no token."""
    if not isinstance(ids, list):
        return ids
    return None if ids else ("no_tokens", "its tokenizer gives this text no token")
