"""The filter pass: every record of every input file, read and run through the belt's per-document stages
(pipeline/spec.py), written as one Parquet part per input file, `_work/filtered/file-NNNNNN.parquet`.

A part is written under a temporary name and renamed once the file is whole (storage.write_atomic), so it is there complete or not
at all, and a rerun after a kill redoes only the files without one, as long as nothing that shapes the parts
changed (`fingerprint`). Nothing here knows the engine: `run` hands FilterFile to engine.map_items.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import socket
import time
from collections import defaultdict
from contextlib import redirect_stdout
from dataclasses import asdict, replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import spec, storage
from pipeline.engines import engine
from pipeline.config import Config, Source, input_format
from pipeline.storage import open_input, write_atomic
from stages.ledger import run_on_alive
from stages.file_names import real_path
from stages.read_text import read_jsonl, read_parquet
from stages.user import UserStage
from stages.warc_read import DOCUMENT_SCHEMA, read_warc

log = logging.getLogger("crawlbelt")
READERS = {"warc": read_warc, "jsonl": read_jsonl, "parquet": read_parquet}
MAX_PRINTED_LINES = 100  # of a stage's `print`s per input file, passed on to the driver's log


def input_files(config: Config) -> list[tuple[str, str]]:
    """(path, source) of every input file the filter pass reads, sorted by path: the fixed order documents are
    numbered in. Curated sources (`curated: true`) skip the filters and join at the tokens pass."""
    files = {path: source.name for source in config.sources if not source.curated for path in source.files}
    return sorted(files.items())


def part_name(file_index: int) -> str:
    return storage.part_name(file_index, "file", 6)


def run(config: Config, files: list[tuple[str, str]], folder: Path) -> dict[str, dict[str, float]]:
    """Write a part for every input file that has none yet; returns the seconds each stage spent (summed over
    the workers) and the seconds of stage work each node did. With transformers scorers, the pass is several
    steps (spec.filter_steps), each writing a part per file: the ones before the last into `folder/_steps/K`."""
    steps = spec.filter_steps(config)
    stage_seconds: defaultdict[str, float] = defaultdict(float)
    node_seconds: defaultdict[str, float] = defaultdict(float)
    for k, (stages, pool) in enumerate(steps):
        into = folder if k == len(steps) - 1 else step_folder(folder, k)
        into.mkdir(parents=True, exist_ok=True)
        for stale in into.glob(".*.tmp"):  # a file being written when the run was killed
            stale.unlink()
        pending: list[dict] = [
            {"file_index": i, "path": path, "source": source}
            for i, (path, source) in enumerate(files)
            if not (into / part_name(i)).exists()
        ]
        if len(pending) < len(files):
            log.info(
                "resume: %d of %d files already through the filter pass%s",
                len(files) - len(pending),
                len(files),
                f" (step {k + 1} of {len(steps)}, from {stages[0].name if stages else 'read'})"
                if len(steps) > 1
                else "",
            )
        if not pending:
            continue
        if pool is None:
            results = _filter_files(config, stages, pending, into)
        else:
            results = _score_files(stages, step_folder(folder, k - 1), into, pending, pool)
        for done in results:
            for printed in done["printed"]:  # a stage's print() in a worker: on the console and in run.log
                stage, _, line = printed.partition(": ")
                log.info("stage %s on %s: %s", stage, files[done["file_index"]][0], line)
            for stage, seconds in done["seconds"].items():
                stage_seconds[stage] += seconds
                node_seconds[done["node"]] += seconds
    return {"stages": dict(stage_seconds), "nodes": dict(node_seconds)}


def step_folder(folder: Path, k: int) -> Path:
    """Where step K of the filter pass writes its parts when a later step reads them (kept on resume with
    `folder`; the passes after read only `folder`'s own parts)."""
    return folder / "_steps" / str(k)


def _filter_files(config: Config, stages: list, pending: list[dict], folder: Path) -> list[dict]:
    filter_file = FilterFile(stages, config.sources, str(folder), config.read, config.storage)
    try:
        return engine.map_items(filter_file, pending, config.resources.filter)
    except Exception as error:
        crashed = None
        if engine.worker_died(error):
            index = engine.failed_item(error)
            named = pending[index]["file_index"] if index is not None and index < len(pending) else None
            crashed = crashed_in(folder, named)
        if crashed is None:
            raise
        raise StageCrashError(
            f"stage {crashed['stage']} ended its worker process (a crash, an exit, the out-of-memory "
            f"killer or a call stuck in C code past twice its time limit) while on {crashed['path']}, on every try; fix the stage or leave that file out"
        ) from error


def _score_files(stages: list, source: Path, folder: Path, pending: list[dict], pool) -> list[dict]:
    try:
        return engine.map_items(ScoreFile(stages, str(source), str(folder)), pending, pool, pool=True)
    except Exception as error:
        if not engine.worker_died(error):
            raise
        names = ", ".join(stage.name for stage in stages)
        raise StageCrashError(
            f"a stage of the step {names} ended its actor process (a crash, an exit or the out-of-memory killer), "
            "on every try; fix the stage, or give the actors more memory"
        ) from error


class StageCrashError(RuntimeError):
    """A stage ended the worker process running it (os._exit, a segfault, the OOM killer), again on each
    retry: one line naming the stage and the input file."""


def marker_name(file_index: int) -> str:
    """Where a worker notes which stage it is in on which file (a `.tmp` name: a rerun clears it)."""
    return f".{part_name(file_index)}.stage.tmp"


def crashed_in(folder: Path, file_index: int | None = None) -> dict | None:
    """The stage and file a worker process was in when it died, from the markers of the files not done: that
    of `file_index` where the engine named it, else one whose process on this machine is gone, else one on
    another node, else any (a process not yet reaped)."""
    named = folder / marker_name(file_index) if file_index is not None else None
    found = []
    for marker in [named] if named and named.exists() else sorted(folder.glob(".file-*.stage.tmp")):
        try:
            found.append(json.loads(marker.read_text()))
        except (OSError, ValueError):  # being written, or removed as its file finished
            continue
    gone = [at for at in found if at["host"] == socket.gethostname() and not _alive(at["pid"])]
    elsewhere = [at for at in found if at["host"] != socket.gethostname()]
    return (gone or elsewhere or found or [None])[0]


def _alive(pid: int) -> bool:
    """Whether a process of this machine runs (a zombie, dead but not yet reaped by its parent, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc here: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat.rpartition(")")[2].split()[0] != "Z"


class FilterFile:
    """One input file through the filter pass: read batch by batch, every stage in order, one part written.
    Returns {file_index, rows, seconds: {stage: seconds}, printed: the first lines its stages printed}."""

    def __init__(self, stages: list, sources: list[Source], folder: str, read, storage):
        self.stages = stages
        self.sources = {
            source.name: replace(source, input=[]) for source in sources
        }  # how each is read, not its file list
        self.folder = Path(folder)
        self.batch_size = read.batch_size
        self.max_payload_bytes = int(read.max_payload_mb * 1e6)
        self.batch_bytes = int(read.batch_mb * 1e6)
        self.storage = storage  # the config's `storage` settings, for s3:// inputs

    def _open(self, path: str):
        return open_input(path, self.storage)

    def _records(self, path: str, file_index: int, source: Source):
        fmt = input_format(path, source)
        options = (
            {}
            if fmt == "warc"
            else {"text_field": source.text_field, "id_field": source.id_field, "url_field": source.url_field}
        )
        return READERS[fmt](
            path,
            file_index,
            source.name,
            self.batch_size,
            self.max_payload_bytes,
            self._open,
            self.batch_bytes,
            **options,
        )

    def _filter(
        self, table: pa.Table, seconds: dict[str, float], at=lambda stage: None, printed: list[str] | None = None
    ) -> pa.Table:
        if not any(stage.name == "extract" for stage in self.stages):
            table = without_text_rejected(table)
        return run_stages(self.stages, table, seconds, at, printed)

    def __call__(self, item: dict) -> dict:
        file_index, path = item["file_index"], item["path"]
        seconds: dict[str, float] = defaultdict(float)
        printed: list[str] = []
        rows = 0
        marker = self.folder / marker_name(file_index)

        def at(stage: str) -> None:
            """Note the stage this process is about to run on this file: if it dies there, the driver
            names them (crashed_in)."""
            marker.write_text(
                json.dumps({"stage": stage, "path": path, "pid": os.getpid(), "host": socket.gethostname()})
            )

        def write(tmp: Path) -> None:
            nonlocal rows
            writer = None
            try:
                start = time.perf_counter()
                at("read")
                for table in self._records(path, file_index, self.sources[item["source"]]):
                    seconds["read"] += time.perf_counter() - start
                    table = self._filter(table, seconds, at, printed)
                    at("read")
                    if writer is None:
                        writer = pq.ParquetWriter(tmp, table.schema, compression="zstd")
                    writer.write_table(table.cast(writer.schema))
                    rows += table.num_rows
                    start = time.perf_counter()
                if writer is None:  # no record at all: the part still says the file is done
                    writer = pq.ParquetWriter(
                        tmp, self._filter(DOCUMENT_SCHEMA.empty_table(), seconds).schema, compression="zstd"
                    )
            finally:
                if writer is not None:
                    writer.close()

        write_atomic(self.folder / part_name(file_index), write)
        marker.unlink(missing_ok=True)
        return {"file_index": file_index, "rows": rows, "seconds": dict(seconds), "printed": printed}


class ScoreFile:
    """One input file through a step of actors (a transformers scorer): its part of the step before, read a row
    group at a time, through the step's stages, written as this step's part."""

    def __init__(self, stages: list, source: str, folder: str):
        self.stages = stages
        self.source = Path(source)
        self.folder = Path(folder)

    def __call__(self, item: dict) -> dict:
        file_index = item["file_index"]
        seconds: dict[str, float] = defaultdict(float)
        rows = 0

        printed: list[str] = []

        def step(table: pa.Table) -> pa.Table:
            return run_stages(self.stages, table, seconds, printed=printed)

        def write(tmp: Path) -> None:
            nonlocal rows
            part = pq.ParquetFile(self.source / part_name(file_index))
            with pq.ParquetWriter(tmp, step(part.schema_arrow.empty_table()).schema, compression="zstd") as writer:
                for group in range(part.num_row_groups):  # the row groups the step before wrote: its batches
                    table = step(part.read_row_group(group))
                    writer.write_table(table.cast(writer.schema))
                    rows += table.num_rows

        write_atomic(self.folder / part_name(file_index), write)
        return {"file_index": file_index, "rows": rows, "seconds": dict(seconds), "printed": printed}


def run_stages(
    stages: list, table: pa.Table, seconds: dict[str, float], at=lambda stage: None, printed: list[str] | None = None
) -> pa.Table:
    """The stages in order over one batch, each one's seconds added up; `at(name)` before each (the crash
    marker), and the first lines they print kept in `printed`."""
    for stage in stages:
        at(stage.name)
        start = time.perf_counter()
        with redirect_stdout(io.StringIO()) as text:  # a worker's stdout reaches no one (Ray) or no log
            out = stage(table)
        if printed is not None:
            lines = text.getvalue().splitlines()
            printed += [f"{stage.name}: {line}" for line in lines[: MAX_PRINTED_LINES - len(printed)]]
        if out.num_rows != table.num_rows:  # a stage marks rows rejected; dropping one would lose it
            raise RuntimeError(f"stage {stage.name} changed the row count {table.num_rows} -> {out.num_rows}")
        seconds[stage.name] += time.perf_counter() - start
        table = out
    return table


def without_text_rejected(table: pa.Table) -> pa.Table:
    """A belt without `extract` (WET, JSONL, Parquet sources): an HTML page a WET file holds among its text
    records has no text for the stages to judge; it is rejected `read:not_text`, not judged as empty."""

    def verdicts(alive: pa.Table):
        reasons = ["read:not_text" if text is None else None for text in alive["text"].to_pylist()]
        details = [reason and "no text: an HTML page needs the extract stage" for reason in reasons]
        return {}, reasons, details

    return run_on_alive(table, "read", verdicts, {})


def fingerprint(config: Config, files: list[tuple[str, str]]) -> str:
    """What the filter pass's parts depend on: the input files (with size and time of local ones), how each
    source is read, and the settings, files and code of the belt's per-document stages. Parts of a run with
    another fingerprint are redone."""

    def stamp(path: str, owner: str) -> list:
        stat = os.stat(real_path(path)) if os.path.exists(real_path(path)) else None  # s3:// inputs: the URI alone
        return [path, owner, stat and stat.st_size, stat and stat.st_mtime_ns]

    inputs = [stamp(path, source) for path, source in files]
    sources = {
        source.name: [
            *[input_format(path, source) for path, owner in files if owner == source.name][:1],
            source.text_field,
            source.id_field,
            source.url_field,
        ]
        for source in config.sources
    }
    stages = []
    for stage in spec.declared(config):
        settings = asdict(getattr(config, stage.spec.section)) if stage.spec.section else dict(stage.entry)
        if isinstance(stage.runner, UserStage):
            settings = stage.runner.fingerprint()
        shared = {section: asdict(getattr(config, section)) for section in stage.spec.shares}
        stages.append([stage.spec.name, {**settings, **shared} if shared else settings])
        for key in stage.spec.files:  # files whose content shapes the stage: their digest, not only size and time
            paths = _file_paths(settings.get(key))
            inputs += [[*stamp(path, stage.spec.name), content_digest(path)] for path in paths]
    text = json.dumps(
        {"inputs": inputs, "sources": sources, "read": asdict(config.read), "stages": stages},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _file_paths(value) -> list[str]:
    """The files a `files` key names: a path, a list of paths, or a list of entries with a `path` (eval sets)."""
    if not value:
        return []
    paths = (
        [value] if isinstance(value, str) else [entry["path"] if isinstance(entry, dict) else entry for entry in value]
    )
    return [file for path in paths for file in _folder_files(path)]


def _folder_files(path: str) -> list[str]:
    """A file, or every file of a folder (a transformers model's: a file copied over one of them is seen)."""
    if not os.path.isdir(path):
        return [path]
    return sorted(os.path.join(root, name) for root, _, names in os.walk(path) for name in names)


def content_digest(path: str) -> str | None:
    """SHA-256 of a local file's bytes (a file copied over another with its size and time kept is still seen);
    None for an s3:// one."""
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def rows_in(folder: Path) -> int:
    """Rows the filter pass wrote: the records it read."""
    return 0 if not folder.is_dir() else sum(pq.ParquetFile(p).metadata.num_rows for p in folder.glob("*.parquet"))
