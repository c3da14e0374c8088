"""Hostile inputs for paragraph dedup and the tokens pass (issue 46), for benchmarks/bench_hostile_files.py:
each case writes its files and config into a folder and returns the `python -m pipeline` arguments. Standard
library, pyarrow and yaml only, so that it runs against the old tree too.

- one_word_lines: a 30 KB .jsonl.gz of three 6.6 MB documents of one-word lines (6.6 million paragraphs,
  nearly all removed as repeats): finalize held every removed paragraph as Python objects.
- tokens_one_word_lines: one 7.6 MB document of one-word lines kept whole: the tokenizer trained on it and
  encoded it in one piece (about 100 bytes a character).
- expected_one: `expected: 1` sized an 8-byte filter that removed most paragraphs as seen, exit 0.
- expected_huge_validate / expected_huge_run: `expected: 10^12` is a 209 GiB filter a shard, found by an
  allocation error after two passes; validate could name it.
- min_words_zero: documents whose every paragraph was seen before, with `min_words: 0`, kept empty.
- nbsp_lines: lines of non-breaking spaces counted as paragraphs, and listed first among the removed.
- curated_with_paragraphs: a curated source skipped paragraph dedup silently.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml


def config(folder: Path, inputs: list[str], paragraphs: dict | None = None, **extra) -> str:
    """A belt of extraction-free text through language (all kept) and paragraph dedup, on two CPUs."""
    settings = {
        "sources": [{"name": "web", "input": inputs}],
        "output": str(folder / "out"),
        "ray": {"num_cpus": 2},
        "stages": ["language"],
        "language": {"method": "fasttext", "languages": [], "threshold": 0.0},
        "classifier": {"kind": "none"},
        "tokenizer": {"vocab_size": 400},
        "packing": {"seq_len": 64},
        "dedup": {"paragraphs": {"enabled": True, "min_words": 5, **(paragraphs or {})}},
        **extra,
    }
    path = folder / "c.yaml"
    path.write_text(yaml.safe_dump(settings))
    return str(path)


def jsonl(folder: Path, texts: list[str]) -> list[str]:
    path = folder / "docs.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts)))
    return [str(path)]


def prose(rng: random.Random, lines: int) -> str:
    return "\n".join(" ".join(f"w{rng.randrange(100_000)}" for _ in range(12)) for _ in range(lines))


def one_word_lines(folder: Path) -> list[str]:
    texts = [f"w{i}\n" + f"a{i}\nb{i}\n" * 1_100_000 for i in range(3)]  # distinct shingles: no near duplicates
    path = folder / "lines.jsonl.gz"
    with gzip.open(path, "wt") as out:  # 30 KB; each line under read.max_payload_mb, escaped
        out.write("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts)))
    return ["run", config(folder, [str(path)], {"filter": "exact", "min_words": 1})]


def tokens_one_word_lines(folder: Path) -> list[str]:
    path = folder / "doc.jsonl.gz"
    with gzip.open(path, "wt") as out:
        out.write(json.dumps({"text": "alpha\nbeta\ngamma\n" * 450_000}) + "\n")  # 7.6 MB of text
    return ["run", config(folder, [str(path)], {"enabled": False})]


def expected_one(folder: Path) -> list[str]:
    rng = random.Random(1)
    inputs = []
    for f in range(4):  # the filter is asked across files: a file's own units are compared with each other
        path = folder / f"part-{f}.jsonl"
        texts = [prose(rng, 40) for _ in range(50)]  # 8,000 distinct paragraphs in all, none repeated
        path.write_text("".join(json.dumps({"id": f"d{f}-{i}", "text": t}) + "\n" for i, t in enumerate(texts)))
        inputs.append(str(path))
    return ["run", config(folder, inputs, {"filter": "bloom", "expected": 1})]


def expected_huge_validate(folder: Path) -> list[str]:
    inputs = jsonl(folder, [prose(random.Random(2), 10)])
    return ["validate", config(folder, inputs, {"filter": "bloom", "expected": 10**12})]


def expected_huge_run(folder: Path) -> list[str]:
    return ["run", expected_huge_validate(folder)[1]]


def min_words_zero(folder: Path) -> list[str]:
    rng = random.Random(3)
    lines = prose(rng, 20).split("\n")
    shuffled = [rng.sample(lines, len(lines)) for _ in range(50)]  # every paragraph seen in the first
    inputs = jsonl(folder, ["\n".join(lines)] + ["\n".join(s) for s in shuffled])
    return ["run", config(folder, inputs, {"filter": "exact", "min_words": 0})]


def nbsp_lines(folder: Path) -> list[str]:
    rng = random.Random(4)
    spaces = "\u00a0\u00a0\u3000"
    inputs = jsonl(folder, [f"{spaces}\n{prose(rng, 10)}\n{spaces}\n{prose(rng, 10)}" for _ in range(100)])
    return ["run", config(folder, inputs, {"filter": "exact"})]


def curated_with_paragraphs(folder: Path) -> list[str]:
    pq.write_table(pa.table({"text": [prose(random.Random(5), 10)]}), folder / "part-00000.parquet")
    path = Path(config(folder, jsonl(folder, [prose(random.Random(6), 10)])))
    settings = yaml.safe_load(path.read_text())
    settings["sources"].append({"name": "earlier", "input": [str(folder / "part-00000.parquet")], "curated": True})
    path.write_text(yaml.safe_dump(settings))
    return ["validate", str(path)]


CASES: dict[str, Callable[[Path], list[str]]] = {
    "one_word_lines": one_word_lines,
    "tokens_one_word_lines": tokens_one_word_lines,
    "expected_one": expected_one,
    "expected_huge_validate": expected_huge_validate,
    "expected_huge_run": expected_huge_run,
    "min_words_zero": min_words_zero,
    "nbsp_lines": nbsp_lines,
    "curated_with_paragraphs": curated_with_paragraphs,
}
