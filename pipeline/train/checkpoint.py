"""Checkpoints with torch.distributed.checkpoint (DCP), complete or invisible.

A checkpoint is a folder `step-NNNNNNNN/`:
  .metadata, __*.distcp   the sharded model and optimizer (DCP; loadable on another number of workers)
  state.json              step, data position, scheduler, recent losses, rollbacks, loss scale (rank 0)
  rng-rank<R>.pt          each worker's random number generator states

Everything is written under `step-NNNNNNNN.tmp/` and renamed when the last byte is down, so a crash
mid-save leaves a .tmp folder that is never loaded (and is removed at the next start). The rename is done
by rank 0 once its DCP save has returned: DCP's coordinator finishes only after every rank has written
its data. The last `keep` complete checkpoints are kept.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from typing import Any
from concurrent.futures import Future
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint import FileSystemReader
from torch.distributed.checkpoint.metadata import Metadata, StorageMeta
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

from pipeline.train.resume import complete_checkpoints, load_metadata


class MetadataCheckedReader(FileSystemReader):
    """DCP's file reader, reading `.metadata` without unpickling anything DCP does not write there (the tensor
    files DCP already reads with `weights_only=True`)."""

    def read_metadata(self, *args: Any, **kwargs: Any) -> Metadata:
        with self.fs.create_stream(self._get_metadata_path(kwargs.get("rank")), "rb") as stream:
            metadata = load_metadata(stream)
        if getattr(metadata, "storage_meta", None) is None:  # as FileSystemReader.read_metadata does
            metadata.storage_meta = StorageMeta()
        metadata.storage_meta.load_id = self.load_id
        return metadata


def rng_states() -> dict:
    """Tensors, numbers and strings only, so that loading needs no unpickling (`weights_only=True`)."""
    state = np.random.get_state(legacy=True)
    assert isinstance(state, tuple)  # legacy: a tuple (a dict only for a bit generator other than MT19937)
    kind, keys, position, has_gauss, gauss = state
    numpy_state = (kind, torch.from_numpy(keys.astype(np.int64)), int(position), int(has_gauss), float(gauss))
    states = {"torch": torch.get_rng_state(), "numpy": numpy_state, "python": random.getstate()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def set_rng_states(states: dict) -> None:
    torch.set_rng_state(states["torch"])
    kind, keys, position, has_gauss, gauss = states["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), position, has_gauss, gauss))
    random.setstate(states["python"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


class Checkpointer:
    def __init__(self, folder: Path, keep: int, async_save: bool):
        self.folder = Path(folder)
        self.keep = keep
        self.rank = dist.get_rank()
        self.pending: tuple[Future, Path] | None = None  # an async save in flight, and its .tmp folder
        # Async saves talk over their own CPU group, so their collectives never interleave with training's.
        self.group = dist.new_group(backend="gloo") if async_save else None
        if self.rank == 0:
            for stale in self.folder.glob("step-*.tmp"):
                shutil.rmtree(stale, ignore_errors=True)
            self.folder.mkdir(parents=True, exist_ok=True)
        dist.barrier()

    def latest(self) -> Path | None:
        """The newest complete checkpoint, after any save in flight has finished (call on every rank)."""
        self.wait()
        dist.barrier()  # rank 0 may have just renamed a finished save: everyone looks after that
        found = complete_checkpoints(self.folder)
        return found[-1] if found else None

    def save(self, step: int, model, optimizer, state: dict) -> float:
        """Save (or, async, start saving) a checkpoint; the seconds training was held up."""
        self.wait()
        started = time.perf_counter()
        tmp = self.folder / f"step-{step:08d}.tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        torch.save(rng_states(), tmp / f"rng-rank{self.rank}.pt")
        if self.rank == 0:
            (tmp / "state.json").write_text(json.dumps(state, indent=1))
        model_state, optimizer_state = get_state_dict(model, optimizer)
        tensors = {"model": model_state, "optimizer": optimizer_state}
        if self.group is None:
            dcp.save(tensors, checkpoint_id=str(tmp))
            self._finish(tmp)
            dist.barrier()
        else:
            # async_save copies the tensors to CPU memory before it returns; the writing goes on in a thread.
            saving = dcp.async_save(tensors, checkpoint_id=str(tmp), process_group=self.group)
            assert isinstance(saving, Future)  # an AsyncSaveResponse only with asynchronous staging (not the default)
            self.pending = (saving, tmp)
        return time.perf_counter() - started

    def poll(self) -> None:
        """Rank 0: publish an async save as soon as it is written (cheap to call every step)."""
        if self.pending and self.rank == 0 and self.pending[0].done():
            self.wait()

    def wait(self) -> None:
        """Finish an async save in flight on this rank."""
        if self.pending:
            future, tmp = self.pending
            self.pending = None
            future.result()
            self._finish(tmp)

    def _finish(self, tmp: Path) -> None:
        if self.rank != 0:
            return
        final = tmp.with_suffix("")
        if final.exists():  # a checkpoint at this step from before a rollback or a crash
            shutil.rmtree(final)
        tmp.rename(final)
        for old in complete_checkpoints(self.folder)[: -self.keep]:
            shutil.rmtree(old, ignore_errors=True)

    def load(self, path: Path, model, optimizer) -> dict:
        """Load model, optimizer and this rank's RNG states from `path`; returns its state.json."""
        model_state, optimizer_state = get_state_dict(model, optimizer)
        tensors: dict[str, Any] = {"model": model_state, "optimizer": optimizer_state}
        dcp.load(tensors, storage_reader=MetadataCheckedReader(str(path)))
        set_state_dict(model, optimizer, model_state_dict=tensors["model"], optim_state_dict=tensors["optimizer"])
        rng = path / f"rng-rank{self.rank}.pt"
        if rng.exists():  # absent when resuming on more workers than saved
            set_rng_states(torch.load(rng, weights_only=True))
        return json.loads((path / "state.json").read_text())
