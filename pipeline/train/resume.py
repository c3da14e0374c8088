"""The complete checkpoints of a run folder, and whether the newest can be resumed with a config.

Asked while the config is checked, before any worker starts: a checkpoint made on other token shards or
with another model shape is a config error in one line, not a traceback from every worker (or a resume
that silently drops layers).

A DCP checkpoint's `.metadata` is a pickle, and unpickling runs whatever code the file names. A run folder
may come from elsewhere (a shared disk, a bucket), so `.metadata` is read by an unpickler that accepts only
the classes DCP writes there; anything else is refused before any worker starts, and nothing in it runs.
"""

from __future__ import annotations

import dataclasses
import json
import pickle
import re
from pathlib import Path
from typing import Any

from pipeline.config import ConfigError, TrainConfig
from pipeline.train.data import TokenShards
from pipeline.train.model import model_args

COMPLETE = re.compile(r"step-(\d{8})$")


def complete_checkpoints(folder: Path) -> list[Path]:
    """Complete checkpoints in `folder`, oldest first."""
    found = (
        [
            p
            for p in folder.glob("step-*")
            if COMPLETE.match(p.name) and (p / ".metadata").exists() and (p / "state.json").exists()
        ]
        if folder.exists()
        else []
    )
    return sorted(found, key=lambda p: _step(p.name))


# What DCP 2.13's .metadata names besides its own metadata classes (listed by unpickling a real one).
_METADATA_GLOBALS = {
    ("torch", "Size"),
    ("torch.serialization", "_get_layout"),  # a layout by its name, from torch's own table
    ("torch.distributed.checkpoint.filesystem", "_StorageInfo"),
    ("pathlib", "PosixPath"),
    ("pathlib", "WindowsPath"),
    ("collections", "OrderedDict"),
}
_DCP_METADATA = "torch.distributed.checkpoint.metadata"


class UnsafeCheckpointError(ValueError):
    """A checkpoint's .metadata names something DCP never writes there."""


class _MetadataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _METADATA_GLOBALS:
            return super().find_class(module, name)
        if module in (_DCP_METADATA, "torch"):
            found = super().find_class(module, name)
            # DCP's own classes (not what that module imports), or a dtype such as torch.float32
            if (isinstance(found, type) and found.__module__ == _DCP_METADATA) or _is_dtype(found):
                return found
        raise UnsafeCheckpointError(f"{module}.{name}")


def _is_dtype(found: Any) -> bool:
    import torch

    return isinstance(found, torch.dtype)


def load_metadata(stream) -> Any:
    """A DCP .metadata read from a binary stream without running code: UnsafeCheckpointError names the first
    global it would have loaded that DCP does not write."""
    return _MetadataUnpickler(stream).load()


def check_metadata(checkpoint: Path) -> None:
    """ConfigError unless `checkpoint`/.metadata holds only what DCP writes there."""
    try:
        with open(checkpoint / ".metadata", "rb") as stream:
            load_metadata(stream)
    except UnsafeCheckpointError as error:
        raise ConfigError(
            f"train.data: {checkpoint}/.metadata names {error}, which no DCP checkpoint holds: it was not written "
            f"by crawlbelt and is not loaded; move {checkpoint.parent.parent} away to start a new run"
        ) from None
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError, TypeError) as error:
        raise ConfigError(
            f"train.data: {checkpoint}/.metadata is not a readable DCP checkpoint ({type(error).__name__}: "
            f"{error}); move {checkpoint.parent.parent} away to start a new run"
        ) from None


def _step(name: str) -> int:
    match = COMPLETE.match(name)
    assert match is not None  # complete_checkpoints keeps only names that match
    return int(match.group(1))


def check_resumable(train: TrainConfig) -> None:
    """ConfigError unless the run folder's newest complete checkpoint (if any) fits the shards and the model."""
    assert train.data is not None  # set by check_train (pipeline/train/checks.py) before it calls this
    folder = Path(train.data) / "train"
    found = complete_checkpoints(folder / "checkpoints")
    if not found:
        return
    latest = found[-1]
    check_metadata(latest)
    saved = json.loads((latest / "state.json").read_text())
    data = TokenShards(train.data)
    if saved["data"] != data.fingerprint():  # the curation run was redone since: a new training run
        raise ConfigError(
            f"train.data: {latest} was made on other token shards than {train.data}/tokens; "
            f"move {folder} away to start a new run"
        )
    shape = dataclasses.asdict(model_args(train.model, data.vocab_size, data.seq_len))  # as the loop saves it
    saved_shape = saved.get("model", shape)  # checkpoints from before shapes were recorded: not compared
    differences = [
        f"{key} {saved_shape.get(key)} there, {value} here"
        for key, value in shape.items()
        if saved_shape.get(key) != value
    ]
    if differences:
        raise ConfigError(
            f"train.model: {latest} was made with another model shape ({'; '.join(differences)}); "
            f"set train.model back, or move {folder} away to start a new run"
        )
