"""`python -m pipeline train-classifier`: a quality classifier from examples, the model a scorer loads.

Two recipes for the data:
  - reference against crawl (the seed's and DCLM's): `--positive` files (e.g. Wikipedia, OpenHermes answers) and
    `--negative` files (crawl text), labelled `hq` and `cc`;
  - labelled or rated (FineWeb-Edu's): `--data` JSONL/Parquet with a text and a `--label-field` per record, or
    a numeric `--score-field` (an LLM's rating).
Text files hold one example per non-blank line; JSONL and Parquet files one per record (`--text-field`), told
apart by their names as a source's `format: auto` tells them (.jsonl/.ndjson/.json, .parquet; gzip or zstd by
their bytes). Files are read as the belt's readers read them: lines in bounded chunks, a Parquet file's needed
columns only, a row group at a time, with the same limits; what passes a limit is one line naming file and row.

Two kinds of model:
  - fasttext: a supervised fastText model (word n-grams), trained by fastText itself, which cannot share an
    environment with fasttext-predict (both are the module `fasttext`): it runs in a child process from the
    folder setup.sh installs it in (FASTTEXT_TRAINER). A numeric score becomes hq at `--cut` and above, else cc.
  - transformers: a classification (labels) or regression (scores) head on a local Hugging Face encoder,
    the encoder frozen (`--freeze`) or trained with it.
A share of the examples (`--held-out`, by a seeded hash of each text, so that copies of a text stay on one
side) is kept out of training; the held-out metrics are printed and written beside the model (metrics.json),
computed with the belt's own scorer. Deterministic for a `--seed`. The model is built in a sibling folder and
then takes `--out`'s place: `--out` is replaced only when empty or a model folder this command wrote (its
`.crawlbelt` marker), never the encoder's folder.
"""

from __future__ import annotations

import contextlib
import decimal
import fnmatch
import gzip
import hashlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from typing import BinaryIO
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from backports import zstd

from pipeline.config import Source, input_format
from pipeline.storage import MARKER, marker_text
from stages.compressed import is_zstd_file
from stages.fasttext_file import MAX_NGRAMS, FastTextFileError
from stages.parquet_pages import page_sizes
from stages.read_text import _MISSING, _field, _json_object, _lines, column_type, text_column_problem
from stages.warc_read import BATCH_BYTES, MAX_FIELD_BYTES

FASTTEXT_TRAINER = Path(sys.prefix) / "fasttext-trainer"  # fastText 0.9.3 with its training API (setup.sh)
POSITIVE, NEGATIVE = "hq", "cc"
MAX_TEXT_BYTES = 10_000_000  # a line or text, as read.max_payload_mb's default
MAX_RECORDS = 10_000_000  # lines or rows read in all: a file cannot make the reading loop for ever
MAX_DATA_BYTES = 2_000_000_000  # of example text held in memory in all
MAX_LABELS = 1000
MAX_SEED = 2**31 - 1  # fastText's seed is a C int
OUT_KIND = "classifier"  # the kind in the `.crawlbelt` marker of a model folder (a run refuses such a folder)
# Every name train-classifier writes into --out (fastText's model, a transformers head and its tokenizer's files):
# an earlier model folder holding any other name is someone's, and is not replaced.
MODEL_NAMES = {MARKER, "metrics.json", "model.bin", "config.json", "generation_config.json", "model.safetensors",
               "model.safetensors.index.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
               "added_tokens.json", "vocab.txt", "vocab.json", "merges.txt", "spiece.model", "tokenizer.model",
               "sentencepiece.bpe.model", "chat_template.jinja", "chat_template.json"}  # fmt: skip
MODEL_PATTERNS = ("model-*-of-*.safetensors",)  # a sharded head's weights
# Upper bounds of the options (fastText allocates dim x 2,000,000 buckets; each n-gram length costs a pass)
MAX_DIM = 1000
MAX_EPOCHS = 10_000
MAX_LR = 10.0
MAX_BATCH = 4096


class TrainingError(ValueError):
    """Bad input or options: one line, exit 2."""


class Terminated(BaseException):
    """SIGTERM, raised where the command is (as KeyboardInterrupt is for Ctrl-C): the model being built is removed
    on the way out."""


@contextlib.contextmanager
def stop_on_sigterm() -> Iterator[None]:
    def stop(signum, frame):
        raise Terminated

    earlier = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, earlier)


@dataclass
class Examples:
    texts: list[str]
    labels: list[str] | None = None  # one per text, or
    scores: list[float] | None = None  # one per text


class Budget:
    """What the files read so far hold, against the bounds on records and bytes held."""

    def __init__(self) -> None:
        self.records = 0
        self.bytes = 0

    def add(self, path: str, records: int, size: int = 0) -> None:
        self.records += records
        self.bytes += size
        if self.records > MAX_RECORDS:
            raise TrainingError(f"{path}: the examples pass {MAX_RECORDS} lines or rows in all")
        if self.bytes > MAX_DATA_BYTES:
            raise TrainingError(f"{path}: the examples pass {MAX_DATA_BYTES} bytes of text in all")


def check_file(path: str) -> None:
    """A regular file, without opening it (a FIFO would wait, /dev/zero never end)."""
    if not os.path.exists(path):
        raise TrainingError(f"{path}: no such file")
    if not os.path.isfile(path):
        raise TrainingError(f"{path}: not a regular file")


def file_format(path: str) -> str:
    """ "jsonl", "parquet" or "text" (one example a line), by the name, as a source's `format: auto`."""
    found = input_format(path, Source())
    return "text" if found == "warc" else found


def read_texts(path: str, text_field: str, budget: Budget | None = None) -> list[str]:
    """The examples of one file: a line each (text files), or a record each (JSON lines, Parquet)."""
    if file_format(path) != "text":
        return read_records(path, text_field, [text_field], budget)[text_field]
    texts = []
    budget = budget or Budget()
    for _, data in file_lines(path, budget):
        text = data.decode("utf-8", errors="replace").strip()
        if text:
            budget.add(path, 0, len(text))
            texts.append(text)
    return texts


def read_records(path: str, text_field: str, fields: list[str], budget: Budget | None = None) -> dict[str, list]:
    """The `fields` of every record of a JSONL or Parquet file that has a text (`fields[0]` is the text), with
    "where" (the file and line or row of each); a record without one of the fields, or a line that is not a
    JSON object, stops here with the file and line."""
    budget = budget or Budget()
    found = file_format(path)
    if found == "parquet":
        records = parquet_records(path, fields, budget)
    elif found == "jsonl":
        records = jsonl_records(path, fields, budget)
    else:
        raise TrainingError(f"{path}: --data takes JSON lines (.jsonl, .ndjson, .json) or .parquet files")
    columns: dict[str, list] = {name: [] for name in [*fields, "where"]}
    for where, values in records:
        text = values[0]
        if text is None or not isinstance(text, str):
            raise TrainingError(f"{where}: {text_field!r} is {json_kind(text)}, not a string")
        if not text.strip():
            continue
        budget.add(path, 0, len(text))
        for name, value in zip(fields, values):
            columns[name].append(value)
        columns["where"].append(where)
    return columns


def decompressed(handle: BinaryIO) -> Callable[[int], bytes]:
    """A read function of the file's decompressed bytes: gzip or zstd told by the first bytes, as the belt's."""
    head = handle.read(4)
    handle.seek(0)
    if head.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=handle).read1
    if is_zstd_file(head):
        return zstd.ZstdFile(handle).read1
    return handle.read


def file_lines(path: str, budget: Budget) -> Iterator[tuple[str, bytes]]:
    """("FILE:LINE", the line's bytes) of each line, read in bounded chunks; a line over MAX_TEXT_BYTES, or a
    compressed stream that breaks, stops here naming the file and line."""
    check_file(path)
    with open(path, "rb") as handle:
        read = LineBound(decompressed(handle), MAX_TEXT_BYTES)
        for line in _lines(read, MAX_TEXT_BYTES, "compressed"):
            where = f"{path}:{line.number}"
            if line.broken is not None:
                raise TrainingError(f"{where}: {line.broken}")
            if read.over:
                raise TrainingError(f"{where}: a line of over {MAX_TEXT_BYTES} bytes, the limit")
            if line.data is None:
                raise TrainingError(f"{where}: a line of {line.size} bytes, over the {MAX_TEXT_BYTES}-byte limit")
            budget.add(path, 1)
            yield where, line.data


class LineBound:
    """A read function that ends the stream (returns b"") once more than `limit` bytes follow the last line
    break: a line too long stops the reading there, not after decompressing all of it (a 3 GB gzip line)."""

    def __init__(self, read: Callable[[int], bytes], limit: int) -> None:
        self.inner, self.limit, self.pending, self.over = read, limit, 0, False

    def __call__(self, size: int) -> bytes:
        if self.over:
            return b""
        chunk = self.inner(size)
        end = chunk.rfind(b"\n")
        self.pending = len(chunk) - end - 1 if end >= 0 else self.pending + len(chunk)
        self.over = self.pending > self.limit
        return b"" if self.over else chunk


def jsonl_records(path: str, fields: list[str], budget: Budget) -> Iterator[tuple[str, list]]:
    for where, data in file_lines(path, budget):
        if not data.strip():
            continue
        record, problem = _json_object(data, first=where.endswith(":1"))
        if record is None:
            raise TrainingError(f"{where}: {problem}")
        values = [_field(record, name) for name in fields]
        if any(value is _MISSING for value in values):
            raise TrainingError(f"{where}: the record has no {' and '.join(map(repr, fields))}")
        yield where, values


def parquet_records(path: str, fields: list[str], budget: Budget) -> Iterator[tuple[str, list]]:
    """The `fields` of each row, read as the belt's Parquet reader reads: only these columns, a row group at a
    time, a page that would inflate past the limits refused before pyarrow decompresses it, few rows a batch."""
    check_file(path)
    with open(path, "rb") as handle:
        try:
            parquet = pq.ParquetFile(handle, page_checksum_verification=True)
        except Exception as error:  # pyarrow's ArrowInvalid for bytes that are not Parquet
            raise TrainingError(f"{path}: not a Parquet file ({one_line(error)})") from None
        schema, metadata = parquet.schema_arrow, parquet.metadata
        problem = text_column_problem(schema, fields[0])
        missing = [name for name in fields[1:] if column_type(schema, name) is None]
        if problem is None and missing:
            problem = f'no column "{missing[0]}" (columns: {", ".join(schema.names)})'
        if problem is not None:
            raise TrainingError(f"{path}: {problem}")
        budget.add(path, metadata.num_rows)  # declared: checked before any row is read
        read = sorted({name.split(".")[0] if name not in schema.names else name for name in fields})
        offset = 0
        for group in range(metadata.num_row_groups):
            rows = batch_rows(handle, metadata.row_group(group), read, path, group)
            try:
                for batch in parquet.iter_batches(batch_size=rows, row_groups=[group], columns=read):
                    columns = [column_values(batch, name, path, offset) for name in fields]
                    for i, values in enumerate(zip(*columns)):
                        yield f"{path} row index {offset + i}", list(values)
                    offset += batch.num_rows
            except (OSError, pa.ArrowException) as error:  # a corrupt page, a checksum that fails
                raise TrainingError(f"{path}: row group {group} unreadable ({one_line(error)})") from None


def batch_rows(handle, group: pq.RowGroupMetaData, read: list[str], path: str, index: int) -> int:
    """How many rows of a row group to decode at once: a batch within BATCH_BYTES, counting each row as large
    as a dictionary page (a value repeated by every row); a page made to inflate past the limits is refused."""
    chunks = [group.column(i) for i in range(group.num_columns)]
    chunks = [chunk for chunk in chunks if chunk.path_in_schema.split(".")[0] in read]
    declared = [page_sizes(handle, chunk) for chunk in chunks]
    largest = max((bomb for _, bomb in declared), default=0)
    limit = max(BATCH_BYTES, MAX_TEXT_BYTES)
    if largest > limit:
        raise TrainingError(f"{path}: row group {index} holds a page inflating to {largest} bytes, over the {limit}")
    size = sum(chunk.total_uncompressed_size for chunk in chunks)
    per_row = max(size / max(1, group.num_rows), max((first for first, _ in declared), default=0), 1)
    return max(1, min(1024, int(BATCH_BYTES // per_row)))


def column_values(batch: pa.RecordBatch, name: str, path: str, offset: int) -> list:
    """Column `name` (dotted: a struct's field) of the batch as Python values; a string over MAX_TEXT_BYTES
    stops here naming its row."""
    top, *parts = [name] if name in batch.schema.names else name.split(".")
    array = batch.column(top)
    for part in parts:
        array = pc.struct_field(array, part)
    if pa.types.is_dictionary(array.type):  # at most a batch of rows, each counted as large as the dictionary
        array = array.dictionary_decode()
    if _is_string(array.type):
        sizes = pc.fill_null(pc.binary_length(array), 0).to_numpy(zero_copy_only=False)
        over = np.flatnonzero(sizes > MAX_TEXT_BYTES)
        if len(over):
            where, size = f"{path} row index {offset + int(over[0])}", int(sizes[over[0]])
            raise TrainingError(f"{where}: {name!r} of {size} bytes, over the {MAX_TEXT_BYTES}-byte limit")
    values = array.to_pylist()
    return [value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value for value in values]


def _is_string(type_: pa.DataType) -> bool:
    kinds = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)
    return any(is_type(type_) for is_type in kinds)


def one_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {' '.join(str(error).split())}"


JSON_KINDS = {type(None): "null", bool: "true or false", list: "an array", dict: "an object"}


def json_kind(value) -> str:
    """What a JSON (or Parquet) value is, in the words of the belt's read:malformed details."""
    if isinstance(value, float):
        return "a number with a fraction"
    if isinstance(value, int) and not isinstance(value, bool):
        return "an integer"
    return JSON_KINDS.get(type(value), "a string" if isinstance(value, str) else type(value).__name__)


def shown(value, width: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


# ---------------------------------------------------------------------------------------------
# Examples


def load_examples(args) -> Examples:
    budget = Budget()
    if args.data:
        if (args.label_field is None) == (args.score_field is None):
            raise TrainingError("--data needs --label-field (labels) or --score-field (numeric scores), one of them")
        field = args.label_field or args.score_field
        texts, values, wheres = [], [], []
        for path in args.data:
            columns = read_records(path, args.text_field, [args.text_field, field], budget)
            texts += columns[args.text_field]
            values += columns[field]
            wheres += columns["where"]
        if args.label_field:
            labels = [label_text(value, where, field) for value, where in zip(values, wheres)]
            count = len(set(labels))
            if count > MAX_LABELS:
                raise TrainingError(
                    f"{count} labels, over the {MAX_LABELS} a classifier may have (--label-field {field!r})"
                )
            return Examples(texts, labels=labels)
        return Examples(texts, scores=[score_number(value, where, field) for value, where in zip(values, wheres)])
    if not args.positive or not args.negative:
        raise TrainingError("give --positive and --negative files (reference against crawl), or --data")
    for path in [*args.positive, *args.negative]:
        check_file(path)
    for path in args.negative:
        if any(os.path.samefile(path, positive) for positive in args.positive):
            raise TrainingError(f"{path}: given as --positive and as --negative")
    positive = [text for path in args.positive for text in read_texts(path, args.text_field, budget)]
    negative = [text for path in args.negative for text in read_texts(path, args.text_field, budget)]
    return Examples(positive + negative, labels=[POSITIVE] * len(positive) + [NEGATIVE] * len(negative))


def label_text(value, where: str, field: str) -> str:
    """A record's label: a string, or an integer as its digits (1 is "1"); one word, as fastText's label syntax
    needs (a label with white space would train one label and be scored as another)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value.is_integer():  # 1.0, as JSON writers write an integer held as a float
        return str(int(value))
    if not isinstance(value, str):
        raise TrainingError(
            f"{where}: --label-field {field!r} is {json_kind(value)}; a label is a string or an integer"
        )
    if len(value.encode("utf-8", errors="replace")) > MAX_FIELD_BYTES:
        raise TrainingError(f"{where}: a label of over {MAX_FIELD_BYTES} bytes")
    value = value.removeprefix("__label__")  # fastText's own prefix, which it writes before every label
    if not value:
        raise TrainingError(f"{where}: the label is empty")
    if value.split() != [value]:
        raise TrainingError(f"{where}: the label {shown(value)} holds white space; a label is one word")
    return value


def score_number(value, where: str, field: str) -> float:
    if isinstance(value, decimal.Decimal):  # a Parquet decimal column
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TrainingError(f"{where}: --score-field {field!r} is {shown(value)}, not a number")
    return float(value)


def split(texts: list[str], held_out: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Training and held-out positions: the examples ordered by a seeded hash of their text (white space
    normalised), the first share held out; copies of a text hash alike, so all of them land on one side."""
    key = seed.to_bytes(8, "little")
    hashes = [hashlib.blake2b(" ".join(text.split()).encode(), digest_size=8, key=key).digest() for text in texts]
    order = sorted(range(len(texts)), key=lambda i: (hashes[i], i))
    cut = max(1, round(len(texts) * held_out))
    while cut < len(order) and hashes[order[cut]] == hashes[order[cut - 1]]:  # the last held text's copies
        cut += 1
    return np.sort(np.array(order[cut:], dtype=np.int64)), np.sort(np.array(order[:cut], dtype=np.int64))


# ---------------------------------------------------------------------------------------------
# Held-out metrics


def label_metrics(truth: list[str], predicted: list[str], probabilities: np.ndarray, labels: list[str]) -> dict:
    """Accuracy, macro-F1 and AUC (of the positive label with two labels, else the mean one-against-rest):
    counted in one pass over the examples, then one AUC per label."""
    true_positives = Counter(t for t, p in zip(truth, predicted) if t == p)
    truths, predictions = Counter(truth), Counter(predicted)
    f1s = []
    for label in labels:  # 2tp / (2tp + fp + fn), fp + tp = predicted as the label, fn + tp = truly the label
        tp = true_positives[label]
        f1s.append(2 * tp / (predictions[label] + truths[label]) if tp else 0.0)
    truth_array = np.asarray(truth, dtype=object)
    aucs = [auc(truth_array == label, probabilities[:, i]) for i, label in enumerate(labels)]
    defined = [a for a in aucs if a is not None]
    return {
        "examples": len(truth),
        "accuracy": sum(true_positives.values()) / len(truth),
        "macro_f1": sum(f1s) / len(f1s),
        "auc": (aucs[-1] if len(labels) == 2 else (sum(defined) / len(defined) if defined else None)),
    }


def auc(positive, scores: np.ndarray) -> float | None:
    """The probability that a positive example scores above a negative one (ties count half); None without both."""
    positive_array = np.asarray(positive, dtype=bool)
    n_pos, n_neg = int(positive_array.sum()), int((~positive_array).sum())
    if not n_pos or not n_neg:
        return None
    ranks = _ranks(np.asarray(scores, dtype=float))
    return float((ranks[positive_array].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, ties given their mean rank."""
    order = np.argsort(values, kind="stable")
    _, first, counts = np.unique(values[order], return_index=True, return_counts=True)
    ranks = np.empty(len(values))
    ranks[order] = np.repeat(first + (counts + 1) / 2, counts)
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
    """fastText's own supervised training in a child process; returns the model's labels. Its examples file
    (train.txt) is written in `out`, the folder being built, and removed after."""
    if not (FASTTEXT_TRAINER / "fasttext").is_dir():
        raise TrainingError(
            f"--kind fasttext needs fastText's trainer in {FASTTEXT_TRAINER} (bash scripts/setup.sh installs it: "
            f"pip install --no-deps --target {FASTTEXT_TRAINER} fasttext==0.9.3)"
        )
    labels = examples.labels or []
    data = out / "train.txt"
    with open(data, "w", encoding="utf-8") as f:
        for i in train:
            f.write(fasttext_line(labels[i], examples.texts[i]))
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
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _, stderr = child.communicate()
    finally:  # Ctrl-C or SIGTERM here: the child goes too (SIGTERM reaches this process only)
        if child.poll() is None:
            child.kill()
            child.wait()
    data.unlink()
    if child.returncode:
        last = (stderr.strip().splitlines() or ["no message"])[-1]
        raise TrainingError(f"fastText's training failed: {last}")
    return sorted(set(labels[i] for i in train))


def fasttext_line(label: str, text: str) -> str:
    """A line of fastText's training file: the label, then the text as the belt's scorer hands it to fastText
    (stages.langid.fasttext_predict: line breaks become spaces, all else as it is, so that a word with a
    non-breaking space is the same word in training and in scoring)."""
    return f"__label__{label} {text.replace(chr(13), ' ').replace(chr(10), ' ')}\n"


def fasttext_predictions(model_path: Path, texts: list[str], labels: list[str]) -> np.ndarray:
    """Each text's probability of each label, by the belt's own fastText scoring: one prediction of every label
    a text (the model loaded once)."""
    from stages import langid

    model = langid.load_fasttext_model(str(model_path))
    column = {label: i for i, label in enumerate(labels)}
    probabilities = np.zeros((len(texts), len(labels)))
    for row, text in enumerate(texts):
        for label, probability in langid.fasttext_predict(model, text or "", -1):
            if label in column:
                probabilities[row, column[label]] = probability
    return probabilities


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
        rows = model_files.check_model_folder(encoder, head=False, config_changes=head)
        config = AutoConfig.from_pretrained(encoder, local_files_only=True, trust_remote_code=False)
        tokenizer = AutoTokenizer.from_pretrained(encoder, local_files_only=True, trust_remote_code=False)
        model_files.pad_with_end_token(tokenizer)
        tokenizer.padding_side = "right"  # as the scorer pads: each text keeps the positions it has alone
        model_files.check_token_ids(tokenizer, rows)
    except model_files.ModelFolderError as error:
        raise TrainingError(f"--encoder: {encoder}: {error}") from None
    except Exception as error:  # broken files: one line, not a traceback
        first = str(error).strip().split("\n")[0]
        raise TrainingError(f"--encoder: {encoder} does not load: {type(error).__name__}: {first}") from None
    # the encoder's auto_map names code of its folder, which the new model's folder does not hold
    config.__dict__.pop("auto_map", None)
    tokenizer.init_kwargs.pop("auto_map", None)
    config.problem_type = None  # the encoder's own head, if it has one, is replaced: no check against it
    config.id2label, config.label2id, config.problem_type = head["id2label"], head["label2id"], head["problem_type"]
    if config.pad_token_id is None:
        config.pad_token_id = tokenizer.pad_token_id
    return tokenizer, config


# ---------------------------------------------------------------------------------------------


def train_classifier(args) -> dict:
    """Train, score the held-out examples, write the model and metrics.json into `args.out`; returns the
    metrics. The options and `--out` are checked before any file is read; the model is built in a sibling
    folder that takes `--out`'s place once whole (an interrupted or failed training leaves `--out` as it was)."""
    check_options(args)
    out = Path(args.out)
    check_out(out, args)
    examples = load_examples(args)
    if args.kind == "fasttext" and examples.scores is not None:  # fastText learns labels: hq at the cut and above
        examples = Examples(examples.texts, labels=[POSITIVE if s >= cut(args) else NEGATIVE for s in examples.scores])
    kinds = set(examples.labels) if examples.labels is not None else None
    if len(examples.texts) < 4 or (kinds is not None and len(kinds) < 2):
        named = "" if kinds is None else f" with the labels {', '.join(sorted(kinds))}"
        raise TrainingError(f"{len(examples.texts)} examples{named}: need at least 4, and two labels")
    train, held = split(examples.texts, args.held_out, args.seed)
    check_training_share(examples, train, args.held_out)
    out.parent.mkdir(parents=True, exist_ok=True)
    build = out.parent / f".{out.name}.building-{os.getpid()}"  # mkdir, not mkdtemp: the umask's permissions
    shutil.rmtree(build, ignore_errors=True)  # a killed run's, whose process id this one has
    build.mkdir()
    try:
        metrics = train_and_score(examples, train, held, build, args)
        (build / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
        (build / MARKER).write_text(marker_text(OUT_KIND))
        replace_out(build, out)
    finally:
        shutil.rmtree(build, ignore_errors=True)
    return metrics


def train_and_score(examples: Examples, train: np.ndarray, held: np.ndarray, build: Path, args) -> dict:
    texts = [examples.texts[i] for i in held]
    if args.kind == "fasttext":
        labels = train_fasttext(examples, train, build, args)
        truth = examples.labels or []
        try:
            probabilities = fasttext_predictions(build / "model.bin", texts, labels)
        except FastTextFileError as error:  # fastText wrote what the belt would refuse to load
            raise TrainingError(f"the model fastText wrote does not pass the belt's check: {error}") from None
        predicted = [labels[int(row.argmax())] for row in probabilities]
        metrics = label_metrics([truth[i] for i in held], predicted, probabilities, labels)
    else:
        from stages.model_scorer import TransformerScorer

        head = train_transformers(examples, train, build, args)
        scorer = TransformerScorer(str(build), max_chars=args.max_chars, max_tokens=args.max_tokens)
        if head is None:
            scores, _ = scorer.score(texts)
            metrics = score_metrics([(examples.scores or [])[i] for i in held], scores, cut(args))
        else:
            probabilities = scorer.logits(texts).softmax(dim=1).numpy()
            predicted = [head[int(row.argmax())] for row in probabilities]
            metrics = label_metrics([(examples.labels or [])[i] for i in held], predicted, probabilities, head)
    return {"kind": args.kind, "trained_on": len(train), "held_out": metrics, "seed": args.seed}


def cut(args) -> float:
    return 3.0 if args.cut is None else args.cut  # FineWeb-Edu's


def check_options(args) -> None:
    """Every option within its bounds, and one recipe, before any file is read: one line naming the option."""
    if not 0 < args.held_out < 1:
        raise TrainingError(f"--held-out: expected a share in (0, 1), got {args.held_out}")
    if not 0 <= args.seed <= MAX_SEED:
        raise TrainingError(f"--seed: expected an integer from 0 to {MAX_SEED}, got {args.seed}")
    bounds = {"word_ngrams": MAX_NGRAMS, "dim": MAX_DIM, "epochs": MAX_EPOCHS, "batch_size": MAX_BATCH,
              "max_tokens": 1_000_000, "max_chars": MAX_TEXT_BYTES}  # fmt: skip
    for name, most in bounds.items():
        value = getattr(args, name)
        if value is not None and not 1 <= value <= most:
            raise TrainingError(f"--{name.replace('_', '-')}: expected an integer from 1 to {most}, got {value}")
    if args.lr is not None and not 0 < args.lr <= MAX_LR:  # nan too
        raise TrainingError(f"--lr: expected a number above 0 and at most {MAX_LR:g}, got {args.lr}")
    if args.data and (args.positive or args.negative):
        raise TrainingError("--data and --positive/--negative are two recipes: give one of them")
    if args.cut is not None and not args.score_field:
        raise TrainingError("--cut applies to --score-field, which is not given")
    if args.cut is not None and not math.isfinite(args.cut):
        raise TrainingError(f"--cut: expected a finite number, got {args.cut}")


def check_training_share(examples: Examples, train: np.ndarray, held_out: float) -> None:
    """The examples left to train on after the held-out share: two labels at least (one label trains a model
    that answers it whatever the text), or two scores."""
    labels = {(examples.labels or [])[i] for i in train} if examples.labels is not None else None
    if len(train) >= 2 and (labels is None or len(labels) >= 2):
        return
    with_labels = "" if labels is None else f", with {len(labels)} labels"
    need = "two examples" if labels is None else "two labels"
    raise TrainingError(
        f"--held-out {held_out} leaves {len(train)} of {len(examples.texts)} examples to train on{with_labels}: "
        f"training needs {need}"
    )


def check_out(out: Path, args) -> None:
    """`--out` may be a new or empty folder, or a model folder this command wrote (its marker, and only names it
    writes), never holding an input (the examples, the encoder) nor inside one."""
    model = out.resolve()
    inputs = [("--data", path) for path in args.data or []]
    inputs += [(option, path) for option in ("--positive", "--negative") for path in getattr(args, option[2:]) or []]
    if args.kind == "transformers" and args.encoder:
        there = Path(args.encoder).resolve()
        if model == there or there in model.parents or model in there.parents:
            raise TrainingError(
                f"--out {out} and --encoder {args.encoder} overlap: the model would overwrite its encoder"
            )
    for option, path in inputs:
        if model in Path(path).resolve().parents:
            raise TrainingError(f"--out {out} holds {option} {path}; keep the examples outside the folder it replaces")
    for folder in [out, *out.parents]:
        if folder.exists() and not folder.is_dir():
            raise TrainingError(f"--out {out}: {folder} is not a folder")
    if not out.is_dir() or not any(out.iterdir()):
        return
    if not is_model_folder(out):
        raise TrainingError(
            f"--out {out}: a folder holding other files; train-classifier replaces only a model folder it wrote"
        )
    foreign = sorted(entry.name for entry in out.iterdir() if not is_model_name(entry))
    if foreign:
        raise TrainingError(
            f"--out {out}: it holds {foreign[0]}, which train-classifier never writes; it replaces only a model "
            "folder it wrote"
        )


def is_model_name(entry: Path) -> bool:
    """A file of a name train-classifier writes (a folder is never one)."""
    name = entry.name
    named = name in MODEL_NAMES or any(fnmatch.fnmatchcase(name, pattern) for pattern in MODEL_PATTERNS)
    return named and entry.is_file() and not entry.is_symlink()


def is_model_folder(out: Path) -> bool:
    marker = out / MARKER
    try:
        return marker.is_file() and json.loads(marker.read_text(errors="replace")) == json.loads(marker_text(OUT_KIND))
    except ValueError:
        return False


def replace_out(build: Path, out: Path) -> None:
    """`build` takes `out`'s place: the earlier folder (empty, or a model folder of ours) moved aside, the new one
    renamed in, then the earlier one removed; so `out` holds exactly the new model's files."""
    if not out.exists():
        os.rename(build, out)
        return
    earlier = Path(tempfile.mkdtemp(prefix=f".{out.name}.replaced-", dir=out.parent))
    os.rename(out, earlier / out.name)
    os.rename(build, out)
    shutil.rmtree(earlier, ignore_errors=True)
