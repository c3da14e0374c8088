"""Hostile inputs for the readers and the earlier surfaces (issue 46), for benchmarks/bench_hostile_files.py.

Each case writes its files (KBs) and a config into a folder and returns the arguments after `python -m pipeline`.
Standard library, pyarrow and yaml only, so that it runs against the old tree too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

SENTENCE = "The river carries sand and small stones from the mountains to the sea, and farmers grow rice there."


def _config(folder: Path, inputs: list[str], stages: list[str] | None = None) -> str:
    """A belt that keeps every readable document, over `inputs`."""
    config = {
        "sources": [{"name": "web", "input": inputs}],
        "classifier": {"kind": "none"},
        "language": {"languages": []},
        "quality": {"enabled": False},
        "repetition": {"enabled": False},
        "dedup": {"near": False},
        "tokenizer": {"vocab_size": 1000},
        "packing": {"seq_len": 64},
        "mixture": {"budget_tokens": 100000},
        **({"stages": stages} if stages else {}),
    }
    path = folder / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def _jsonl(path: Path, texts: list[str]) -> None:
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))


def _texts(n: int) -> list[str]:
    return [f"Document {i}. {SENTENCE}" for i in range(n)]


def parquet_url_twice(folder: Path) -> list[str]:
    """A folder run over a JSONL file and a join's Parquet file with two `url` columns (before: a traceback)."""
    inputs = folder / "in"
    inputs.mkdir()
    _jsonl(inputs / "a.jsonl", _texts(20))
    columns = [pa.array(_texts(40)[20:]), pa.array(["http://a.example/"] * 20), pa.array(["http://b.example/"] * 20)]
    pq.write_table(pa.Table.from_arrays(columns, names=["text", "url", "url"]), inputs / "joined.parquet")
    return ["run", _config(folder, [str(inputs)]), "--output", str(folder / "out")]


def parquet_text_twice(folder: Path) -> list[str]:
    """A folder run over a JSONL file and a Parquet file with two `text` columns (first: a traceback; then a
    validate line; now the file is one read:malformed row and the JSONL file is read)."""
    inputs = folder / "in"
    inputs.mkdir()
    _jsonl(inputs / "a.jsonl", _texts(20))
    columns = [pa.array(_texts(5)), pa.array(_texts(10)[5:])]
    pq.write_table(pa.Table.from_arrays(columns, names=["text", "text"]), inputs / "two texts.parquet")
    return ["run", _config(folder, [str(inputs)]), "--output", str(folder / "out")]


def name_not_utf8(folder: Path) -> list[str]:
    """A folder holding a file whose name is Latin-1 (first: a traceback in a worker; then a validate line; now
    it is read, its name written escaped: `caf\\xe9.jsonl`)."""
    inputs = folder / "in"
    inputs.mkdir()
    _jsonl(inputs / "good.jsonl", _texts(10))
    with open(os.fsencode(inputs) + b"/caf\xe9.jsonl", "wb") as handle:
        handle.write(json.dumps({"text": SENTENCE}).encode() + b"\n")
    return ["run", _config(folder, [str(inputs)]), "--output", str(folder / "out")]


def link_loop(folder: Path) -> list[str]:
    """`validate` over a folder with two symbolic links to itself (before: a hang)."""
    inputs = folder / "in"
    (inputs / "sub").mkdir(parents=True)
    _jsonl(inputs / "sub" / "a.jsonl", _texts(10))
    for name in ("up", "up again"):
        (inputs / "sub" / name).symlink_to("..")
    return ["validate", _config(folder, [str(inputs)])]


def pii_plus_digits(folder: Path) -> list[str]:
    """A run with the pii stage over 300 KB of `+` and 40 digits (before: 15 ms a plus sign, 150 s here)."""
    text = ("+" + "1" * 40 + " ") * (300_000 // 42)
    _jsonl(folder / "digits.jsonl", [text, *_texts(5)])
    stages = ["extract", "pii"]
    return ["run", _config(folder, [str(folder / "digits.jsonl")], stages), "--output", str(folder / "out")]


CASES: dict[str, Callable[[Path], list[str]]] = {
    "readers_parquet_url_twice": parquet_url_twice,
    "readers_parquet_text_twice": parquet_text_twice,
    "readers_name_not_utf8": name_not_utf8,
    "readers_link_loop": link_loop,
    "readers_pii_plus_digits": pii_plus_digits,
}
