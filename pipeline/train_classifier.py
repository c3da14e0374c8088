"""`python -m pipeline train-classifier`: a quality classifier from examples, the model a scorer loads.

Two recipes for the data:
  - reference against crawl (the seed's and DCLM's): `--positive` files (e.g. Wikipedia, OpenHermes answers) and
    `--negative` files (crawl text), labelled `hq` and `cc`;
  - labelled or rated (FineWeb-Edu's): `--data` JSONL/Parquet with a text and a `--label-field` per record, or
    a numeric `--score-field` (an LLM's rating).
Text files hold one example per non-blank line; JSONL and Parquet files one per record (`--text-field`).

Two kinds of model:
  - fasttext: a supervised fastText model (word n-grams), trained by fastText itself, which cannot share an
    environment with fasttext-predict (both are the module `fasttext`): it runs in a child process from the
    folder setup.sh installs it in (FASTTEXT_TRAINER). A numeric score becomes hq at `--cut` and above, else cc.
  - transformers: a classification (labels) or regression (scores) head on a local Hugging Face encoder,
    the encoder frozen (`--freeze`) or trained with it.
A share of the examples (`--held-out`) is kept out of training; the held-out metrics are printed and written
beside the model (metrics.json), computed with the belt's own scorer. Deterministic for a `--seed`.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

FASTTEXT_TRAINER = Path(sys.prefix) / "fasttext-trainer"  # fastText 0.9.3 with its training API (setup.sh)
POSITIVE, NEGATIVE = "hq", "cc"


class TrainingError(ValueError):
    """Bad input or options: one line, exit 2."""


@dataclass
class Examples:
    texts: list[str]
    labels: list[str] | None = None  # one per text, or
    scores: list[float] | None = None  # one per text


def read_texts(path: str, text_field: str) -> list[str]:
    """The examples of one file: a line each (text files), or a record each (.jsonl, .parquet)."""
    if not os.path.isfile(path):
        raise TrainingError(f"{path}: no such file")
    if path.endswith((".jsonl", ".parquet")):
        return [str(value) for value in read_records(path, text_field, [text_field])[text_field]]
    with open(path, encoding="utf-8", errors="replace") as f:
        return [line.strip() for line in f if line.strip()]


def read_records(path: str, text_field: str, fields: list[str]) -> dict[str, list]:
    """The `fields` of every record of a JSONL or Parquet file that has a text; a record without one of the
    fields, or a line that is not JSON, stops here with the file and line."""
    if not os.path.isfile(path):
        raise TrainingError(f"{path}: no such file")
    if path.endswith(".parquet"):
        table = pq.read_table(path)
        missing = [name for name in fields if name not in table.column_names]
        if missing:
            raise TrainingError(f"{path}: no column {missing[0]!r} (it has {', '.join(table.column_names)})")
        rows = table.select(fields).to_pylist()
    elif path.endswith(".jsonl"):
        rows = []
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError as error:
                    raise TrainingError(f"{path}:{number}: not a JSON record ({error})") from None
                if not isinstance(record, dict) or any(name not in record for name in fields):
                    raise TrainingError(f"{path}:{number}: the record has no {' and '.join(map(repr, fields))}")
                rows.append(record)
    else:
        raise TrainingError(f"{path}: --data takes .jsonl or .parquet files")
    rows = [row for row in rows if isinstance(row[text_field], str) and row[text_field].strip()]
    return {name: [row[name] for row in rows] for name in fields}


def load_examples(args) -> Examples:
    if args.data:
        if (args.label_field is None) == (args.score_field is None):
            raise TrainingError("--data needs --label-field (labels) or --score-field (numeric scores), one of them")
        field = args.label_field or args.score_field
        columns: dict[str, list] = {args.text_field: [], field: []}
        for path in args.data:
            for name, values in read_records(path, args.text_field, [args.text_field, field]).items():
                columns[name] += values
        texts, values = columns[args.text_field], columns[field]
        if args.label_field:
            return Examples(texts, labels=[str(value) for value in values])
        bad = [v for v in values if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)]
        if bad:
            raise TrainingError(f"--score-field {field!r}: expected numbers, got {bad[0]!r}")
        return Examples(texts, scores=[float(value) for value in values])
    if not args.positive or not args.negative:
        raise TrainingError("give --positive and --negative files (reference against crawl), or --data")
    positive = [text for path in args.positive for text in read_texts(path, args.text_field)]
    negative = [text for path in args.negative for text in read_texts(path, args.text_field)]
    return Examples(positive + negative, labels=[POSITIVE] * len(positive) + [NEGATIVE] * len(negative))


def split(count: int, held_out: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Training and held-out positions: a seeded shuffle, the held-out share at its end."""
    order = np.random.default_rng(seed).permutation(count)
    held = max(1, round(count * held_out))
    return np.sort(order[:-held]), np.sort(order[-held:])


# ---------------------------------------------------------------------------------------------
# Held-out metrics


def label_metrics(truth: list[str], predicted: list[str], probabilities: np.ndarray, labels: list[str]) -> dict:
    """Accuracy, macro-F1 and AUC (of the positive label with two labels, else the mean one-against-rest)."""
    f1s = []
    for label in labels:
        tp = sum(t == label and p == label for t, p in zip(truth, predicted))
        fp = sum(t != label and p == label for t, p in zip(truth, predicted))
        fn = sum(t == label and p != label for t, p in zip(truth, predicted))
        f1s.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    aucs = [auc([t == label for t in truth], probabilities[:, i]) for i, label in enumerate(labels)]
    defined = [a for a in aucs if a is not None]
    return {
        "examples": len(truth),
        "accuracy": sum(t == p for t, p in zip(truth, predicted)) / len(truth),
        "macro_f1": sum(f1s) / len(f1s),
        "auc": (aucs[-1] if len(labels) == 2 else (sum(defined) / len(defined) if defined else None)),
    }


def auc(positive: list[bool], scores: np.ndarray) -> float | None:
    """The probability that a positive example scores above a negative one (ties count half); None without both."""
    positive_array = np.asarray(positive)
    n_pos, n_neg = int(positive_array.sum()), int((~positive_array).sum())
    if not n_pos or not n_neg:
        return None
    ranks = _ranks(np.asarray(scores, dtype=float))
    return float((ranks[positive_array].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, ties given their mean rank."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    sorted_values = values[order]
    start = 0
    while start < len(values):
        end = start
        while end + 1 < len(values) and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        ranks[order[start : end + 1]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def score_metrics(truth: list[float], predicted: list[float], cut: float) -> dict:
    """Mean squared error, and F1 of `score >= cut` (FineWeb-Edu's cut: 3)."""
    tp = sum(t >= cut and p >= cut for t, p in zip(truth, predicted))
    fp = sum(t < cut <= p for t, p in zip(truth, predicted))
    fn = sum(p < cut <= t for t, p in zip(truth, predicted))
    return {
        "examples": len(truth),
        "mse": float(np.mean((np.asarray(truth) - np.asarray(predicted)) ** 2)),
        "cut": cut,
        "f1_at_cut": 2 * tp / (2 * tp + fp + fn) if tp else 0.0,
    }


# ---------------------------------------------------------------------------------------------
# fastText


def train_fasttext(examples: Examples, train: np.ndarray, out: Path, args) -> list[str]:
    """fastText's own supervised training in a child process; returns the model's labels."""
    if not (FASTTEXT_TRAINER / "fasttext").is_dir():
        raise TrainingError(
            f"--kind fasttext needs fastText's trainer in {FASTTEXT_TRAINER} (bash scripts/setup.sh installs it: "
            f"pip install --no-deps --target {FASTTEXT_TRAINER} fasttext==0.9.3)"
        )
    labels = examples.labels or []
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "train.txt"
        with open(data, "w", encoding="utf-8") as f:
            for i in train:  # fastText's format: its labels first, then the text on one line
                f.write(f"__label__{labels[i]} {' '.join(examples.texts[i].split())}\n")
        settings = {
            "input": str(data),
            "epoch": args.epochs or 5,
            "lr": args.lr or 0.1,
            "wordNgrams": args.word_ngrams,
            "dim": args.dim,
            "minCount": 1,
            "thread": 1,  # one thread and a seed: the same model every time
            "seed": args.seed,
            "verbose": 0,
        }
        code = (
            f"import sys; sys.path.insert(0, {str(FASTTEXT_TRAINER)!r}); import fasttext; "
            f"fasttext.train_supervised(**{settings!r}).save_model({str(out / 'model.bin')!r})"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if done.returncode:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise TrainingError(f"fastText's training failed: {last}")
    return sorted(set(labels[i] for i in train))


def fasttext_predictions(model_path: Path, texts: list[str], labels: list[str]) -> np.ndarray:
    """Each text's probability of each label, by the belt's own fastText scorer."""
    from stages.classifier import FastTextClassifier

    return np.array([[FastTextClassifier(model_path, label).score(text) for label in labels] for text in texts])


# ---------------------------------------------------------------------------------------------
# A transformers head


def train_transformers(examples: Examples, train: np.ndarray, out: Path, args) -> list[str] | None:
    """A head on the local encoder `args.encoder`, trained with AdamW; saved with its tokenizer. Returns the
    labels (None for a regression head)."""
    try:
        import torch
        from transformers import AutoModelForSequenceClassification
        from transformers.utils import logging as transformers_logging

        from stages import model_files
    except ImportError:
        raise TrainingError(
            "--kind transformers needs the classify extra: .venv/bin/python -m pip install -e '.[classify]'"
        ) from None
    if not args.encoder or not (Path(args.encoder) / "config.json").is_file():
        raise TrainingError(f"--encoder: {args.encoder!r} is not a model folder (no config.json in it)")
    transformers_logging.set_verbosity_error()  # "newly initialized head" is what this command is for
    transformers_logging.disable_progress_bar()
    labels = sorted(set(examples.labels)) if examples.labels is not None else None
    names = dict(enumerate(labels or ["score"]))
    problem = "regression" if labels is None else "single_label_classification"
    head = {"id2label": names, "label2id": {name: i for i, name in names.items()}, "problem_type": problem}
    tokenizer, config = _encoder_parts(args.encoder, head)
    torch.manual_seed(args.seed)
    model = AutoModelForSequenceClassification.from_pretrained(
        args.encoder,
        config=config,
        local_files_only=True,
        ignore_mismatched_sizes=True,
        trust_remote_code=False,
        use_safetensors=True,
    )
    max_tokens = min(args.max_tokens, model_files.position_limit(tokenizer, config))  # no more than its positions
    if args.freeze:
        model.base_model.requires_grad_(False)
    if labels is None:
        targets = torch.tensor([(examples.scores or [])[i] for i in train], dtype=torch.float32)
    else:
        targets = torch.tensor([labels.index((examples.labels or [])[i]) for i in train])
    texts = [examples.texts[i][: args.max_chars] for i in train]
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=args.lr or 5e-5)
    shuffle = torch.Generator().manual_seed(args.seed)
    model.train()
    for _ in range(args.epochs or 3):
        for batch in torch.randperm(len(texts), generator=shuffle).split(args.batch_size):
            encoded = tokenizer(
                [texts[i] for i in batch],
                truncation=True,
                max_length=max_tokens,
                padding=True,
                return_tensors="pt",
            )
            optimizer.zero_grad()
            model(**encoded, labels=targets[batch]).loss.backward()
            optimizer.step()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return labels


def _encoder_parts(encoder: str, head: dict):
    """The encoder folder's tokenizer (padding with its end token if it has no pad token) and its config with
    the new head, after the checks a scorer's folder gets (stages/model_files.py): nothing in it runs
    (trust_remote_code=False, stdin never read), its config matches its weights."""
    from transformers import AutoConfig, AutoTokenizer

    from stages import model_files

    try:
        model_files.check_model_folder(encoder, head=False, config_changes=head)
        config = AutoConfig.from_pretrained(encoder, local_files_only=True, trust_remote_code=False)
        tokenizer = AutoTokenizer.from_pretrained(encoder, local_files_only=True, trust_remote_code=False)
        model_files.pad_with_end_token(tokenizer)
    except model_files.ModelFolderError as error:
        raise TrainingError(f"--encoder: {encoder}: {error}") from None
    except Exception as error:  # broken files: one line, not a traceback
        first = str(error).strip().split("\n")[0]
        raise TrainingError(f"--encoder: {encoder} does not load: {type(error).__name__}: {first}") from None
    config.problem_type = None  # the encoder's own head, if it has one, is replaced: no check against it
    config.id2label, config.label2id, config.problem_type = head["id2label"], head["label2id"], head["problem_type"]
    if config.pad_token_id is None:
        config.pad_token_id = tokenizer.pad_token_id
    return tokenizer, config


# ---------------------------------------------------------------------------------------------


def train_classifier(args) -> dict:
    """Train, score the held-out examples, write the model and metrics.json into `args.out`; returns the
    metrics."""
    examples = load_examples(args)
    if args.kind == "fasttext" and examples.scores is not None:  # fastText learns labels: hq at the cut and above
        examples = Examples(examples.texts, labels=[POSITIVE if s >= args.cut else NEGATIVE for s in examples.scores])
    if args.kind == "fasttext":  # a fastText label is one word
        examples.labels = [label.replace(" ", "_") for label in examples.labels or []]
    kinds = set(examples.labels) if examples.labels is not None else None
    if len(examples.texts) < 4 or (kinds is not None and len(kinds) < 2):
        named = "" if kinds is None else f" with the labels {', '.join(sorted(kinds))}"
        raise TrainingError(f"{len(examples.texts)} examples{named}: need at least 4, and two labels")
    if not 0 < args.held_out < 1:
        raise TrainingError(f"--held-out: expected a share in (0, 1), got {args.held_out}")
    train, held = split(len(examples.texts), args.held_out, args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    texts = [examples.texts[i] for i in held]
    if args.kind == "fasttext":
        labels = train_fasttext(examples, train, out, args)
        truth = examples.labels or []
        probabilities = fasttext_predictions(out / "model.bin", texts, labels)
        predicted = [labels[int(row.argmax())] for row in probabilities]
        metrics = label_metrics([truth[i] for i in held], predicted, probabilities, labels)
    else:
        from stages.model_scorer import TransformerScorer

        head = train_transformers(examples, train, out, args)
        scorer = TransformerScorer(str(out), max_chars=args.max_chars, max_tokens=args.max_tokens)
        if head is None:
            scores, _ = scorer.score(texts)
            metrics = score_metrics([(examples.scores or [])[i] for i in held], scores, args.cut)
        else:
            probabilities = scorer.logits(texts).softmax(dim=1).numpy()
            predicted = [head[int(row.argmax())] for row in probabilities]
            metrics = label_metrics([(examples.labels or [])[i] for i in held], predicted, probabilities, head)
    metrics = {"kind": args.kind, "trained_on": len(train), "held_out": metrics, "seed": args.seed}
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    return metrics
