"""The complete checkpoints of a run folder, and whether the newest can be resumed with a config.

Asked while the config is checked, before any worker starts: a checkpoint made on other token shards or
with another model shape is a config error in one line, not a traceback from every worker (or a resume
that silently drops layers).
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

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


def _step(name: str) -> int:
    match = COMPLETE.match(name)
    assert match is not None  # complete_checkpoints keeps only names that match
    return int(match.group(1))


def check_resumable(train: TrainConfig) -> None:
    """ConfigError unless the run folder's newest complete checkpoint (if any) fits the shards and the model."""
    assert train.data is not None  # set by config._check_train before it calls this
    folder = Path(train.data) / "train"
    found = complete_checkpoints(folder / "checkpoints")
    if not found:
        return
    latest = found[-1]
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
