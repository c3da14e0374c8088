"""Hostile inputs of `train-classifier` (issue 46): each case writes its files into a folder and returns the
arguments after `python -m pipeline`. Standard library, numpy and pyarrow only (runs against the old tree too)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

WORDS = "the a of web page text crawl quality model good bad news shop forum blog recipe".split()


def _sentence(i: int) -> str:
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(12)) + f" n{i}"


def _texts(folder: Path) -> tuple[str, str]:
    good, bad = folder / "good.txt", folder / "bad.txt"
    good.write_text("".join(f"{_sentence(i)} good\n" for i in range(20)))
    bad.write_text("".join(f"{_sentence(i)} bad\n" for i in range(20)))
    return str(good), str(bad)


def parquet_dictionary_bomb(folder: Path) -> list[str]:
    """About 20 KB on disk: 40 labelled texts, and an unused column whose one 100 MB dictionary value (a page
    that compresses to a few KB) is repeated by every row: decoded, 40 rows x 100 MB = 4 GB."""
    rows = 40
    bomb = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), pa.array(["x" * (100 << 20)]))
    table = pa.table(
        {
            "text": [_sentence(i) for i in range(rows)],
            "label": ["hq" if i % 2 else "cc" for i in range(rows)],
            "bomb": bomb,
        }
    )
    pq.write_table(table, folder / "bomb.parquet", compression="zstd", compression_level=19)
    return ["train-classifier", "--kind", "fasttext", "--data", str(folder / "bomb.parquet"),
            "--label-field", "label", "--out", str(folder / "out")]  # fmt: skip


def hundred_mb_line(folder: Path) -> list[str]:
    """A --negative text file whose last line is 100 MB of words."""
    good, bad = _texts(folder)
    with open(bad, "a") as f:
        for _ in range(100):
            f.write("word " * 200_000 + " ")
        f.write("\n")
    return ["train-classifier", "--kind", "fasttext", "--positive", good, "--negative", bad,
            "--out", str(folder / "out")]  # fmt: skip


def gzip_jsonl_read_as_text(folder: Path) -> list[str]:
    """Examples in .jsonl.gz: read as the belt reads JSONL (before: gzip bytes learned as words)."""
    good, bad = (folder / "good.jsonl.gz", folder / "bad.jsonl.gz")
    for path, tag in ((good, "good"), (bad, "bad")):
        with gzip.open(path, "wt") as f:
            f.writelines(json.dumps({"text": f"{_sentence(i)} {tag}"}) + "\n" for i in range(20))
    return ["train-classifier", "--kind", "fasttext", "--positive", str(good), "--negative", str(bad),
            "--out", str(folder / "out")]  # fmt: skip


def many_labels(folder: Path, labels: int = 1500) -> list[str]:
    """1,500 labels (over the bound of 1,000), 4 examples each: held-out metrics were cubic in the labels (a
    model load per text and label, each predicting every label)."""
    with open(folder / "labels.jsonl", "w") as f:
        for i in range(labels * 4):
            f.write(json.dumps({"text": f"{_sentence(i)} l{i % labels}", "label": f"l{i % labels}"}) + "\n")
    return ["train-classifier", "--kind", "fasttext", "--data", str(folder / "labels.jsonl"), "--label-field",
            "label", "--epochs", "1", "--out", str(folder / "out")]  # fmt: skip


def thousand_labels(folder: Path) -> list[str]:
    """1,000 labels, as many as a classifier may have: the held-out metrics, now linear in the labels."""
    return many_labels(folder, 1000)


def gzip_line_bomb(folder: Path) -> list[str]:
    """About 1 MB on disk: a .jsonl.gz of 1,000 gzip members, each 1 MB of one letter, one 1 GB line (before: all
    of it decompressed before the line limit's error; after: given up past 10 MB)."""
    member = gzip.compress(b"a" * (1 << 20), compresslevel=9)
    (folder / "bomb.jsonl.gz").write_bytes(member * 1000)
    return ["train-classifier", "--kind", "fasttext", "--data", str(folder / "bomb.jsonl.gz"),
            "--label-field", "label", "--out", str(folder / "out")]  # fmt: skip


def word_ngrams_1000(folder: Path) -> list[str]:
    """--word-ngrams 1000 (before: trained, then a traceback on the model's check; after: one line up front)."""
    good, bad = _texts(folder)
    return ["train-classifier", "--kind", "fasttext", "--positive", good, "--negative", bad,
            "--word-ngrams", "1000", "--out", str(folder / "out")]  # fmt: skip


def examples_inside_out(folder: Path) -> list[str]:
    """--data OUT/train.jsonl --out OUT, OUT an earlier model folder (before: exit 0, train.jsonl deleted)."""
    out = folder / "out"
    out.mkdir()
    (out / ".crawlbelt").write_text(
        json.dumps({"format": "crawlbelt-output", "version": 1, "kind": "classifier"}) + "\n"
    )
    with open(out / "train.jsonl", "w") as f:
        for i in range(40):
            f.write(json.dumps({"text": _sentence(i), "label": "hq" if i % 2 else "cc"}) + "\n")
    return ["train-classifier", "--kind", "fasttext", "--data", str(out / "train.jsonl"),
            "--label-field", "label", "--out", str(out)]  # fmt: skip


CASES: dict[str, Callable[[Path], list[str]]] = {
    "trainclf_parquet_dictionary_bomb": parquet_dictionary_bomb,
    "trainclf_100mb_line": hundred_mb_line,
    "trainclf_jsonl_gz": gzip_jsonl_read_as_text,
    "trainclf_many_labels": many_labels,
    "trainclf_1000_labels": thousand_labels,
    "trainclf_gzip_line_bomb": gzip_line_bomb,
    "trainclf_word_ngrams_1000": word_ngrams_1000,
    "trainclf_examples_inside_out": examples_inside_out,
}
