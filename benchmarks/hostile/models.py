"""Hostile transformers model folders (issue 46), for benchmarks/bench_hostile_files.py: each case writes a tiny
BERT scorer folder by hand (config.json, model.safetensors from numpy, a word-level tokenizer.json), makes one
file of it hostile, and returns the `python -m pipeline` arguments that load it. Standard library, numpy and
yaml only, so that it runs against the old tree too."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import yaml

HIDDEN, LAYERS, POSITIONS = 32, 2, 128
WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", *"the a of and to in is was for on that with as by it at from".split()]
DOCUMENT = ("The river flows past the old mill and the village keeps its market on Saturday mornings. " * 8).strip()


def bert_tensors(labels: int = 2, hidden: int = HIDDEN, vocab: int = len(WORDS)) -> dict[str, np.ndarray]:
    """The parameters of a BertForSequenceClassification (random, float32): about 160 KB."""
    rng = np.random.default_rng(0)
    shapes = {
        "bert.embeddings.word_embeddings.weight": (vocab, hidden),
        "bert.embeddings.position_embeddings.weight": (POSITIONS, hidden),
        "bert.embeddings.token_type_embeddings.weight": (2, hidden),
        "bert.embeddings.LayerNorm.weight": (hidden,),
        "bert.embeddings.LayerNorm.bias": (hidden,),
        "bert.pooler.dense.weight": (hidden, hidden),
        "bert.pooler.dense.bias": (hidden,),
        "classifier.weight": (labels, hidden),
        "classifier.bias": (labels,),
    }
    for layer in range(LAYERS):
        at = f"bert.encoder.layer.{layer}."
        for part in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            shapes[at + part + ".weight"], shapes[at + part + ".bias"] = (hidden, hidden), (hidden,)
        shapes[at + "intermediate.dense.weight"], shapes[at + "intermediate.dense.bias"] = (
            (4 * hidden, hidden),
            (4 * hidden,),
        )
        shapes[at + "output.dense.weight"], shapes[at + "output.dense.bias"] = (hidden, 4 * hidden), (hidden,)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes[at + norm + ".weight"], shapes[at + norm + ".bias"] = (hidden,), (hidden,)
    return {name: (rng.standard_normal(shape) * 0.02).astype(np.float32) for name, shape in shapes.items()}


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    header, offset = {}, 0
    for name, array in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(a.tobytes() for a in tensors.values()))


def tokenizer_json(pre_tokenizer: dict | None = None) -> dict:
    """A word-level tokenizer ([CLS] text [SEP]), split on whitespace unless `pre_tokenizer` says otherwise."""
    specials = [
        {
            "id": i,
            "content": w,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for i, w in enumerate(WORDS[:4])
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": specials,
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": pre_tokenizer or {"type": "WhitespaceSplit"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
            ],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {w: {"id": w, "ids": [i], "tokens": [w]} for i, w in enumerate(WORDS[:4]) if i >= 2},
        },
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": {w: i for i, w in enumerate(WORDS)}, "unk_token": "[UNK]"},
    }


def model_folder(
    folder: Path, config: dict | None = None, tensors: dict | None = None, tokenizer: dict | None = None
) -> Path:
    """A scorer folder; `config` entries override the tiny BERT's."""
    folder.mkdir(parents=True, exist_ok=True)
    settings = {
        "architectures": ["BertForSequenceClassification"],
        "model_type": "bert",
        "vocab_size": len(WORDS),
        "hidden_size": HIDDEN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": 2,
        "intermediate_size": 4 * HIDDEN,
        "max_position_embeddings": POSITIONS,
        "type_vocab_size": 2,
        "pad_token_id": 0,
        "id2label": {"0": "low", "1": "high"},
        "label2id": {"low": 0, "high": 1},
        "problem_type": "single_label_classification",
        **(config or {}),
    }
    (folder / "config.json").write_text(json.dumps({k: v for k, v in settings.items() if v is not None}))
    write_safetensors(folder / "model.safetensors", bert_tensors() if tensors is None else tensors)
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer or tokenizer_json()))
    (folder / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "model_max_length": POSITIONS,
                "pad_token": "[PAD]",
                "unk_token": "[UNK]",
                "cls_token": "[CLS]",
                "sep_token": "[SEP]",
            }
        )
    )
    return folder


def scorer_config(folder: Path, model: Path, documents: list[str], **settings) -> Path:
    """A JSONL source of `documents` and a belt of a transformers scorer on `model`."""
    (folder / "docs.jsonl").write_text("".join(json.dumps({"text": text}) + "\n" for text in documents))
    config = {
        "sources": [{"name": "docs", "input": [str(folder / "docs.jsonl")]}],
        "output": str(folder / "out"),
        "ray": {"num_cpus": 2},
        "classifier": {"kind": "none"},
        "tokenizer": {"vocab_size": 400},
        "packing": {"seq_len": 64},
        "stages": [{"scorer": "hq", "kind": "transformers", "model": str(model), **settings}],
    }
    (folder / "c.yaml").write_text(yaml.safe_dump(config))
    return folder / "c.yaml"


def _run(folder: Path, model: Path, documents: list[str] | None = None, **settings) -> list[str]:
    config = scorer_config(folder, model, documents or [DOCUMENT] * 4, **settings)
    return ["run", str(config), "--output", str(folder / "out")]


def billion_labels(folder: Path) -> list[str]:
    """config.json says num_labels 1e9 (no id2label); the weights hold two."""
    model = model_folder(folder / "model", {"id2label": None, "label2id": None, "num_labels": 1_000_000_000})
    return _run(folder, model)


def billion_labels_validate(folder: Path) -> list[str]:
    model = model_folder(folder / "model", {"id2label": None, "label2id": None, "num_labels": 1_000_000_000})
    return ["validate", str(scorer_config(folder, model, [DOCUMENT]))]


def huge_dimensions(folder: Path) -> list[str]:
    """config.json says hidden_size 65,536 and 500,000 words; the 160 KB of weights hold 32 and 20."""
    model = model_folder(folder / "model", {"hidden_size": 65_536, "intermediate_size": 262_144, "vocab_size": 500_000})
    return _run(folder, model)


def pickle_weights(folder: Path) -> list[str]:
    """pytorch_model.bin (a pickle: code runs when it loads) instead of safetensors."""
    model = model_folder(folder / "model")
    (model / "model.safetensors").unlink()
    marker = folder / "pickle-ran"
    # a pickle that calls os.system: loading it runs the command
    payload = b"cos\nsystem\n(S'touch " + str(marker).encode() + b"'\ntR."
    (model / "pytorch_model.bin").write_bytes(payload)
    return _run(folder, model)


def headless(folder: Path) -> list[str]:
    """A folder without its classifier head's weights: before, scored with a random head."""
    tensors = {k: v for k, v in bert_tensors().items() if not k.startswith("classifier.")}
    return _run(folder, model_folder(folder / "model", tensors=tensors))


def long_labels(folder: Path) -> list[str]:
    """Two labels of a megabyte each, copied into every scored row."""
    names = {"0": "low" * 350_000, "1": "high" * 260_000}
    model = model_folder(folder / "model", {"id2label": names, "label2id": {v: int(k) for k, v in names.items()}})
    return _run(folder, model, [DOCUMENT] * 200)


def slow_tokenizer(folder: Path) -> list[str]:
    """tokenizer.json splits words with a backtracking regular expression: a 6,000-character document takes
    tens of seconds."""
    split = {"type": "Split", "pattern": {"Regex": "(a|aa)+$"}, "behavior": "Isolated", "invert": False}
    model = model_folder(folder / "model", tokenizer=tokenizer_json(split))
    return _run(folder, model, [DOCUMENT, ("a" * 29 + " ") * 200, DOCUMENT])


def no_tokenizer(folder: Path) -> list[str]:
    """tokenizer.json and tokenizer_config.json deleted: before, transformers built a fallback tokenizer and
    every document got the same score."""
    model = model_folder(folder / "model")
    (model / "tokenizer.json").unlink()
    (model / "tokenizer_config.json").unlink()
    return _run(folder, model, [DOCUMENT, "the river", "a of and to in"])


def nan_config(folder: Path) -> list[str]:
    """config.json's layer_norm_eps is NaN: before, every score NaN, kept past a threshold."""
    return _run(folder, model_folder(folder / "model", {"layer_norm_eps": float("nan")}), threshold=0.5)


def linked_to_dev_zero(folder: Path) -> list[str]:
    """tokenizer.json is a link to /dev/zero: before, a line cut off at 'from one of: '."""
    model = model_folder(folder / "model")
    (model / "tokenizer.json").unlink()
    (model / "tokenizer.json").symlink_to("/dev/zero")
    return ["validate", str(scorer_config(folder, model, [DOCUMENT]))]


def two_broken_scorers(folder: Path) -> list[str]:
    """Two scorers, each broken: before, validate named the first only."""
    first = model_folder(folder / "one", {"id2label": {"0": "x", "1": "x"}, "label2id": {"x": 1}})
    second = model_folder(folder / "two", {"layer_norm_eps": float("nan")})
    config = scorer_config(folder, first, [DOCUMENT])
    settings = yaml.safe_load(config.read_text())
    settings["stages"].append({"scorer": "hq2", "kind": "transformers", "model": str(second)})
    config.write_text(yaml.safe_dump(settings))
    return ["validate", str(config)]


CASES: dict[str, Callable[[Path], list[str]]] = {
    "models_no_tokenizer": no_tokenizer,
    "models_nan_config": nan_config,
    "models_linked_to_dev_zero": linked_to_dev_zero,
    "models_two_broken_scorers": two_broken_scorers,
    "models_billion_labels": billion_labels,
    "models_billion_labels_validate": billion_labels_validate,
    "models_huge_dimensions": huge_dimensions,
    "models_pickle_weights": pickle_weights,
    "models_headless": headless,
    "models_long_labels": long_labels,
    "models_slow_tokenizer": slow_tokenizer,
}
