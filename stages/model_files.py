"""Checks of a Hugging Face model folder before anything loads it (issue 46): nothing in it runs, and nothing it
declares is allocated before it is compared with its files.

- config.json is read within a size bound, and its numbers (labels, vocabulary, widths, layers, positions) within
  bounds no real classifier comes near, so that the model it describes can be built at all;
- the weights are safetensors only: a pickle (`pytorch_model.bin`) is code that runs when it loads;
- the model the config describes is built on torch's meta device (no memory), and each of its parameters'
  names and shapes compared with the safetensors header, whose offsets are checked against the file's size: a
  config that claims more than its weights hold, or weights without the classification head (a bare encoder,
  another task's head), are refused before from_pretrained allocates anything;
- the labels are bounded in count and in length (a label's name is copied into every scored row), and unique;
- every file of the folder is a regular file (a link to /dev/zero or a FIFO is never read), the ones transformers
  reads within a size bound; config.json's numbers are finite (a NaN makes every score NaN);
- the tokenizer is the folder's own tokenizer.json (without it transformers builds a fallback that scores every
  document alike), it loads, and its ids fit the model's token embeddings, as does the pad token config.json
  names (the scorer pads with it).
"""

from __future__ import annotations

import json
import math
import os
import struct
from pathlib import Path

MAX_CONFIG_BYTES = 1 << 20  # a real config.json is a few KB
MAX_HEADER_BYTES = 100 << 20  # a safetensors header: about 100 bytes per tensor
MAX_TOKENIZER_BYTES = 200 << 20  # tokenizer.json: a 250k-word vocabulary with its merges is about 20 MB
MAX_LABELS = 1_000
MAX_LABEL_CHARS = 100
READ_FILES = (".json", ".txt", ".model")  # what transformers reads of a folder besides its weights: bounded
# config.json's sizes: each well above any classifier's (XLM-R large: 250,002 words, 1,024 wide, 24 layers)
SIZE_BOUNDS = {
    "vocab_size": 1_000_000,
    "hidden_size": 16_384,
    "intermediate_size": 65_536,
    "num_hidden_layers": 128,
    "num_attention_heads": 256,
    "num_key_value_heads": 256,
    "max_position_embeddings": 1_000_000,
    "type_vocab_size": 1_000,
    "num_labels": MAX_LABELS,
}
PICKLED = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")  # torch.save's formats: code runs when they load
DTYPE_BYTES = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2,
               "U16": 2, "I8": 1, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}  # fmt: skip


class ModelFolderError(ValueError):
    """A model folder that may not be loaded: one line naming the file and the problem."""


def check_files(folder: str) -> None:
    """Every entry of the folder but a subfolder is a regular file (a link is followed: the Hugging Face cache
    links its files), and the files transformers reads are within their size bounds, before anything reads them."""
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if os.path.isdir(path) or name == "config.json":  # config.json: read_config's checks, in its words
            continue
        if not os.path.isfile(path):
            raise ModelFolderError(f"{name} is not a regular file")
        if name.endswith(READ_FILES) and os.path.getsize(path) > MAX_TOKENIZER_BYTES:
            raise ModelFolderError(f"{name}: {os.path.getsize(path):,} bytes, over {MAX_TOKENIZER_BYTES:,}")


def read_config(folder: str) -> dict:
    """config.json, its size and numbers bounded, its model type one transformers has (never a folder's code)."""
    path = os.path.join(folder, "config.json")
    if not os.path.lexists(path):
        raise ModelFolderError("no config.json in it: not a model folder")
    if not os.path.isfile(path):
        raise ModelFolderError("config.json is not a regular file")
    if os.path.getsize(path) > MAX_CONFIG_BYTES:
        raise ModelFolderError(f"config.json: {os.path.getsize(path):,} bytes, over {MAX_CONFIG_BYTES:,} for a config")
    try:
        config = json.loads(Path(path).read_bytes())
    except ValueError as error:
        raise ModelFolderError(f"config.json: not JSON ({error})") from None
    if not isinstance(config, dict):
        raise ModelFolderError("config.json: expected a JSON object")
    where = first_non_finite(config)
    if where is not None:
        raise ModelFolderError(f"config.json: {where[0]} is {where[1]}, not a finite number")
    for key, bound in SIZE_BOUNDS.items():
        value = config.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= bound):
            raise ModelFolderError(f"config.json: {key} {value!r} is not a whole number in [1, {bound:,}]")
    from transformers import CONFIG_MAPPING

    if config.get("model_type") not in CONFIG_MAPPING:
        raise ModelFolderError(
            f"config.json: model_type {config.get('model_type')!r} is not one transformers has (code in a model folder "
            "is never run)"
        )
    return config


def first_non_finite(value, key: str = "") -> tuple[str, str] | None:
    """(its key, NaN or Infinity) of the first number in a JSON value that is not finite; Python's json reads
    NaN, Infinity and 1e999."""
    if isinstance(value, float) and not math.isfinite(value):
        return key or "a value", "NaN" if value != value else "Infinity"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for inner, item in items:
        found = first_non_finite(item, f"{key}.{inner}" if key else str(inner))
        if found:
            return found
    return None


def labels_of(config: dict) -> tuple[list[str], str]:
    """The head's label names and its problem type: regression (one output), multi_label_classification
    (a sigmoid per label) or single_label_classification (a softmax)."""
    id2label = config.get("id2label")
    if id2label is None:
        id2label = {str(i): f"LABEL_{i}" for i in range(config.get("num_labels", 2))}
    if not isinstance(id2label, dict) or not 0 < len(id2label) <= MAX_LABELS:
        raise ModelFolderError(f"config.json: id2label: expected 1 to {MAX_LABELS:,} labels")
    try:
        labels = [id2label[key] for key in sorted(id2label, key=int)]
    except (ValueError, TypeError):
        raise ModelFolderError("config.json: id2label: expected whole-number keys") from None
    if any(not isinstance(name, str) or len(name) > MAX_LABEL_CHARS for name in labels):
        raise ModelFolderError(
            f"config.json: id2label: a label name is not text of at most {MAX_LABEL_CHARS} characters"
        )
    twice = [name for name in dict.fromkeys(labels) if labels.count(name) > 1]
    if twice:
        raise ModelFolderError(
            f"config.json: id2label: the label {twice[0]!r} is named twice (which one would `label` be?)"
        )
    problem = config.get("problem_type")
    if problem == "regression" or len(labels) == 1:
        return labels, "regression"
    return labels, "multi_label_classification" if problem == "multi_label_classification" else "single_label"


def safetensors_shapes(path: str) -> dict[str, tuple[int, ...]]:
    """The tensors' shapes a safetensors file's header declares, each one's bytes checked against its offsets and
    the offsets against the file's size."""
    size, file = os.path.getsize(path), os.path.basename(path)
    with open(path, "rb") as f:
        start = f.read(8)
        (length,) = struct.unpack("<Q", start) if len(start) == 8 else (-1,)
        if not 0 < length <= min(MAX_HEADER_BYTES, size - 8):
            raise ModelFolderError(f"{file}: not a safetensors file (its header's length does not fit the file)")
        try:
            header = json.loads(f.read(length))
        except ValueError:
            raise ModelFolderError(f"{file}: not a safetensors file (its header is not JSON)") from None
    if not isinstance(header, dict):
        raise ModelFolderError(f"{file}: not a safetensors file (its header is not a JSON object)")
    shapes = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            shape, (begin, end) = tuple(int(n) for n in entry["shape"]), entry["data_offsets"]
            wanted = math.prod(shape) * DTYPE_BYTES[entry["dtype"]]
        except (KeyError, TypeError, ValueError):
            raise ModelFolderError(f"{file}: tensor {name[:100]!r}: not a safetensors entry") from None
        if min(shape, default=0) < 0 or not 0 <= begin <= end <= size - 8 - length or end - begin != wanted:
            raise ModelFolderError(f"{file}: tensor {name[:100]!r}: its offsets do not fit its shape or the file")
        shapes[name] = shape
    return shapes


def weight_shapes(folder: str) -> dict[str, tuple[int, ...]]:
    """Every tensor of the folder's safetensors weights (one file, or the shards an index names)."""
    pickled = sorted(name for name in os.listdir(folder) if name.endswith(PICKLED))
    files = sorted(name for name in os.listdir(folder) if name.endswith(".safetensors"))
    if not files:
        found = f" ({pickled[0]} is a pickle: loading it can run code)" if pickled else ""
        raise ModelFolderError(f"no safetensors weights{found}; save the model with safetensors")
    shapes: dict[str, tuple[int, ...]] = {}
    for name in files:
        shapes.update(safetensors_shapes(os.path.join(folder, name)))
    return shapes


def check_model_folder(folder: str, head: bool = True, config_changes: dict | None = None) -> int:
    """Refuse a folder whose config describes another model than its weights hold, or without its tokenizer;
    returns the number of token ids its embeddings hold (check_token_ids). `head`: the weights must hold a
    sequence-classification head (a scorer); else only the encoder (the encoder train-classifier puts a head on).
    `config_changes`: settings the loader will change (labels)."""
    check_files(folder)
    config = read_config(folder)
    labels_of(config)
    architectures = config.get("architectures") or []
    if head and not any(str(name).endswith("ForSequenceClassification") for name in architectures):
        named = ", ".join(map(str, architectures)) or "no architectures"
        raise ModelFolderError(f"config.json: {named}: not a sequence-classification model (the scorer needs its head)")
    found = weight_shapes(folder)
    expected = meta_model_shapes(config | (config_changes or {}))
    prefix, rows = expected.pop("")
    if not head:  # the encoder's own weights, with or without its base-model prefix; a missing pooler is trained
        expected = {name: shape for name, shape in expected.items() if name.startswith(prefix + ".")}
        expected = {name: shape for name, shape in expected.items() if ".pooler." not in name or name in found}
    for name, shape in expected.items():
        have = found.get(name, found.get(name.removeprefix(prefix + ".")))
        if have is None:
            raise ModelFolderError(f"the weights have no {name} (config.json describes another model)")
        if have != shape:
            raise ModelFolderError(f"{name} is {list(have)} in the weights, {list(shape)} by config.json")
    if head:
        check_pad_id(config, rows)
    check_tokenizer_file(folder)
    return rows


def check_pad_id(config: dict, rows: int) -> None:
    """The pad token config.json names, if any, is one of the model's tokens: the scorer pads batches with it."""
    pad = config.get("pad_token_id")
    if pad is not None and (isinstance(pad, bool) or not isinstance(pad, int) or not 0 <= pad < rows):
        raise ModelFolderError(
            f"config.json: pad_token_id {pad!r} is not a token of the model (0 to {rows - 1:,}): batches are padded "
            "with it"
        )


def check_tokenizer_file(folder: str) -> None:
    """tokenizer.json is there and loads (its error in one complete line, not transformers' cut one)."""
    from tokenizers import Tokenizer

    path = os.path.join(folder, "tokenizer.json")
    if not os.path.lexists(path):
        raise ModelFolderError(
            "it has no tokenizer.json (a scorer's folder holds its tokenizer: save it with the model)"
        )
    try:
        Tokenizer.from_file(path)
    except Exception as error:
        first = str(error).strip().split("\n")[0][:300]
        raise ModelFolderError(f"tokenizer.json does not load: {first}") from None


def check_token_ids(tokenizer, rows: int) -> None:
    """A tokenizer whose ids go past the model's token embeddings would index past them."""
    top = max(tokenizer.get_vocab().values(), default=0)
    if top >= rows:
        raise ModelFolderError(
            f"its tokenizer has ids up to {top:,}, past the model's {rows:,} token embeddings (vocab_size)"
        )


def meta_model_shapes(config: dict) -> dict:
    """The parameters' names and shapes of the sequence-classification model a (bounded) config describes,
    built on the meta device: no memory. Tied copies are left out (the file holds one). Key "" holds the base
    model's prefix and the number of its token embeddings."""
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification

    settings = {key: value for key, value in config.items() if key not in ("auto_map", "model_type")}
    built = AutoConfig.for_model(config["model_type"], **settings)
    for key, bound in SIZE_BOUNDS.items():  # again under the names each model's config maps (GPT-2's n_layer)
        value = getattr(built, key, None)
        if isinstance(value, int) and not isinstance(value, bool) and not 0 < value <= bound:
            raise ModelFolderError(f"config.json: {key} {value!r} is not a whole number in [1, {bound:,}]")
    with torch.device("meta"):
        model = AutoModelForSequenceClassification.from_config(built, trust_remote_code=False)
    tied = set(getattr(model, "all_tied_weights_keys", None) or {})
    shapes: dict = {name: tuple(p.shape) for name, p in model.named_parameters() if name not in tied}
    shapes[""] = (model.base_model_prefix, model.get_input_embeddings().num_embeddings)
    return shapes


def position_limit(tokenizer, config) -> int:
    """The most tokens a text may have: the smaller of the tokenizer's limit and the model's positions (a
    tokenizer without a limit says 1e30; a model without positions, rotary, has none)."""
    limits = [tokenizer.model_max_length, getattr(config, "max_position_embeddings", None)]
    known = [int(limit) for limit in limits if isinstance(limit, (int, float)) and 0 < limit < 1e9]
    return min(known, default=1 << 30)


def pad_with_end_token(tokenizer) -> None:
    """A tokenizer without a pad token (a decoder's) pads with its end token; without either, one line."""
    if tokenizer.pad_token_id is not None:
        return
    if tokenizer.eos_token is None:
        raise ModelFolderError("its tokenizer has no pad token and no end (eos) token to pad with")
    tokenizer.pad_token = tokenizer.eos_token
