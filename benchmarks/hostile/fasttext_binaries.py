"""Hostile fastText model binaries (issue 46), for benchmarks/bench_hostile_files.py: each case writes a tiny
supervised fastText model with struct (fastText's .bin layout), makes it hostile, and returns the
`python -m pipeline` arguments that load it (as language.model_path or a `kind: fasttext` scorer). Standard
library and yaml only, so that it runs against the old tree too."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path

import yaml

DOCUMENT = ("The river flows past the old mill and the village keeps its market on Saturday mornings. " * 8).strip()


def entry(word: bytes, label: bool) -> bytes:
    return word + b"\0" + struct.pack("<qb", 1, int(label))


def model_bytes(words=(b"river", b"sea"), labels=(b"__label__hq", b"__label__lq"), dim=2, input_rows=None) -> bytes:
    """A dense supervised model (softmax loss, no n-grams): header, settings, dictionary, input, output."""
    rows = len(words) if input_rows is None else input_rows
    settings = struct.pack("<12id", dim, 5, 5, 1, 5, 1, 3, 3, 0, 0, 0, 100, 1e-4)
    dictionary = struct.pack("<iiiqq", len(words) + len(labels), len(words), len(labels), 10, -1)
    dictionary += b"".join(entry(w, False) for w in words) + b"".join(entry(w, True) for w in labels)
    inputs = b"\0" + struct.pack("<qq", rows, dim) + b"\0" * (4 * len(words) * dim)
    outputs = b"\0" + struct.pack("<qq", len(labels), dim) + b"\0" * (4 * len(labels) * dim)
    return struct.pack("<ii", 793712314, 12) + settings + dictionary + inputs + outputs


def config(folder: Path, model: Path, as_scorer: bool = False) -> Path:
    (folder / "docs.jsonl").write_text(json.dumps({"text": DOCUMENT}) + "\n")
    settings = {
        "sources": [{"name": "docs", "input": [str(folder / "docs.jsonl")]}],
        "output": str(folder / "out"),
        "ray": {"num_cpus": 2},
        "classifier": {"kind": "none"},
        "tokenizer": {"vocab_size": 400},
        "packing": {"seq_len": 64},
    }
    if as_scorer:
        scorer = {"scorer": "hq", "kind": "fasttext", "model_path": str(model), "label": "__label__hq"}
        settings["stages"] = ["extract", "language", scorer]
    else:
        settings["language"] = {"method": "fasttext", "languages": [], "model_path": str(model)}
    (folder / "c.yaml").write_text(yaml.safe_dump(settings))
    return folder / "c.yaml"


def word_without_end(folder: Path) -> Path:
    """95 bytes: the dictionary's first word runs into the end of the file (no NUL)."""
    model = folder / "model.bin"
    model.write_bytes(model_bytes()[:95])
    return model


def huge_matrix(folder: Path) -> Path:
    """The input matrix header asks for 1.5e9 x 1 floats (6 GB) in a file of a few hundred bytes."""
    model = folder / "model.bin"
    model.write_bytes(model_bytes(dim=1, input_rows=1_500_000_000))
    return model


def long_label(folder: Path) -> Path:
    """A label name of 1 MB."""
    model = folder / "model.bin"
    model.write_bytes(model_bytes(labels=(b"__label__" + b"x" * 2**20,)))
    return model


def validate(make: Callable[[Path], Path], as_scorer: bool = False) -> Callable[[Path], list[str]]:
    return lambda folder: ["validate", str(config(folder, make(folder), as_scorer))]


def run(make: Callable[[Path], Path], as_scorer: bool = False) -> Callable[[Path], list[str]]:
    return lambda folder: ["run", str(config(folder, make(folder), as_scorer)), "--output", str(folder / "out")]


CASES: dict[str, Callable[[Path], list[str]]] = {
    "fasttext_word_without_end_validate": validate(word_without_end),
    "fasttext_word_without_end_scorer_run": run(word_without_end, as_scorer=True),
    "fasttext_6gb_matrix_validate": validate(huge_matrix),
    "fasttext_6gb_matrix_scorer_validate": validate(huge_matrix, as_scorer=True),
    "fasttext_1mb_label_validate": validate(long_label),
}
