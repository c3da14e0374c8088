"""Hostile outputs, names and token ids (issue 46), for benchmarks/bench_hostile_files.py: a given tokenizer.json
whose ids are not contiguous or pass any bound, source names that would break the dataset card, and manifests
edited into markup or into another shape for `report`. Each case writes its files into `folder` and returns the
`python -m pipeline` arguments. Standard library and yaml only, so that it runs against the old tree too."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import yaml

SCRIPT = "<script>alert(1)</script>"
WORDS = "the river flows past the old mill and the village keeps its market on saturday mornings".split()


def documents(folder: Path, count: int = 6) -> Path:
    """`count` distinct documents of plain English (nothing for the belt to reject), as JSONL."""
    lines = []
    for i in range(count):
        text = f"Page {i} of the river notes. " + " ".join(WORDS[(i + k) % len(WORDS)] for k in range(120)) + "."
        lines.append(json.dumps({"id": f"doc-{i}", "text": text, "url": f"https://river.example/{i}"}))
    (folder / "docs.jsonl").write_text("\n".join(lines) + "\n")
    return folder / "docs.jsonl"


def config(folder: Path, name: str = "docs", **extra) -> Path:
    settings = {
        "sources": [{"name": name, "input": [str(documents(folder))]}],
        "output": str(folder / "out"),
        "stages": ["language"],
        "ray": {"num_cpus": 2},
        "language": {"method": "fasttext", "languages": [], "threshold": 0.0},
        "classifier": {"kind": "none"},
        "tokenizer": {"vocab_size": 400},
        "packing": {"seq_len": 64},
        **extra,
    }
    (folder / "c.yaml").write_text(yaml.safe_dump(settings))
    return folder / "c.yaml"


def sparse_tokenizer(path: Path, top_id: int, entries: int) -> Path:
    """A word-level tokenizer.json of `entries` words whose ids run up to `top_id`: the documents' words take
    the highest ids, "the" the highest of all."""
    words = sorted(set(WORDS) - {"the"}) + ["the"]
    filler = [f"w{i}" for i in range(entries - 2 - len(words))]
    names = ["<|endoftext|>", "[UNK]"] + (filler + words)[-(entries - 2) :]
    step = top_id // (entries - 1)
    vocab = {token: i * step for i, token in enumerate(names[:-1])} | {names[-1]: top_id}
    special = {"id": 0, "content": "<|endoftext|>", "single_word": False, "lstrip": False, "rstrip": False}
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [special | {"normalized": False, "special": True}],
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"},
    }
    path.write_text(json.dumps(tokenizer))
    return path


def sparse_token_ids(folder: Path) -> list[str]:
    """2,000 entries up to id 71,999: the id width came from the vocabulary size (uint16), an OverflowError
    traceback after the filter pass; now uint32 from the largest id, and the run completes."""
    tokenizer = sparse_tokenizer(folder / "tokenizer.json", 71_999, 2_000)
    formats = ["parquet", "megatron", "mds", "nanotron"]
    cfg = config(folder, tokenizer={"path": str(tokenizer)}, packing={"seq_len": 64, "formats": formats})
    return ["run", str(cfg), "--output", str(folder / "out")]


def token_ids_past_bound(folder: Path) -> list[str]:
    """Ten entries, the last at id 4,000,000,000: now one line at validation (ids up to 16,777,215)."""
    tokenizer = sparse_tokenizer(folder / "tokenizer.json", 4_000_000_000, 10)
    return ["validate", str(config(folder, tokenizer={"path": str(tokenizer)}))]


def hostile_source_names(folder: Path) -> list[str]:
    """A source named with a newline, `---`, `|` and markup, with the dataset card: now one escaped cell."""
    name = f"web\n---\nconfigs: []\n{SCRIPT} | x"
    cfg = config(folder, name=name, packing={"seq_len": 64, "formats": ["parquet", "huggingface"]})
    return ["run", str(cfg), "--output", str(folder / "out")]


def manifest(documents: object = 2) -> dict:
    """A complete run's manifest by hand, its numbers edited into markup."""
    return {
        "complete": True,
        "counts": {
            "records_read": SCRIPT,
            "not_documents": {},
            "documents": documents,
            "kept": SCRIPT,
            "rejected": {},
            "rejected_by_reason": {},
        },
        "invariants": {SCRIPT: True},
        "stages": {"quality": {"rows_in": 2, "rejected": 0, "seconds": 0.1}},
        "wall_seconds": SCRIPT,
        "config": {"output": str(Path("/tmp") / SCRIPT)},
    }


def edited_manifest_report(folder: Path) -> list[str]:
    """`report` on a manifest whose number cells hold markup: written raw before, now escaped text."""
    (folder / "out").mkdir()
    (folder / "out" / "manifest.json").write_text(json.dumps(manifest()))
    return ["report", str(folder / "out"), "--output", str(folder / "report.html")]


def reshaped_manifest_report(folder: Path) -> list[str]:
    """`report` on a manifest with a word where a count was: a traceback before, now one line (exit 2)."""
    (folder / "out").mkdir()
    (folder / "out" / "manifest.json").write_text(json.dumps(manifest(documents="many")))
    return ["report", str(folder / "out"), "--output", str(folder / "report.html")]


CASES: dict[str, Callable[[Path], list[str]]] = {
    "sparse_token_ids": sparse_token_ids,
    "token_ids_past_bound": token_ids_past_bound,
    "hostile_source_names": hostile_source_names,
    "edited_manifest_report": edited_manifest_report,
    "reshaped_manifest_report": reshaped_manifest_report,
}
