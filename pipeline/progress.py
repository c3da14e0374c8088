"""Where a run stands, on the driver: the pass it is in, documents and bytes done of the pass's total, the rate
and the time left, and the counts so far (records read, rejected per stage and reason, CPU-seconds per stage,
warnings and errors). Shown on the console (one line redrawn on a terminal, a log line every
`progress.log_every_s` elsewhere), written to OUT/_work/progress.json every few seconds, and served to
Prometheus (pipeline/metrics.py, `metrics.port`).

Everything here is counted from work the workers finished; nothing here writes an output byte:
- the filter pass: its parts in `_work/filtered`, each written whole when its input file is done
  (`FinishedParts`): exact records, input bytes and verdicts of the files finished;
- the other passes (dedup, paragraphs, finalize, tokens): the engine's tasks finished of the current engine call's
  tasks (`tasks`, called by pipeline/engines/engine_ray.DataProgress and engine_spark's job poller), as a share of the
  pass's documents and bytes, which the filter pass's output gives before the pass starts.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from pipeline.storage import write_atomic

log = logging.getLogger("crawlbelt")
PROGRESS_FILE = "progress.json"
WRITE_EVERY_S = 5.0  # progress.json, and as each pass starts
REDRAW_EVERY_S = 1.0  # the terminal's line
NOT_DOCUMENT = "not_document"  # the ledger's stage of records that are no document (stages/ledger.py)

_current: Tracker | None = None
_reporter: Reporter | None = None


def tasks(done: int, total: int) -> None:
    """The engine's tasks finished of the tasks of its current call (a Ray Data execution, a Spark job)."""
    if _current is not None:
        _current.tasks(done, total)


def stop_writing() -> None:
    """No more progress.json: the run is about to remove its _work folder (a file written into it meanwhile
    would keep the folder)."""
    if _reporter is not None:
        with _reporter.write_lock:
            _reporter.writing = False


def step_started() -> None:
    """An engine call starts: a pass's next step over its documents."""
    if _current is not None:
        _current.step_started()


class FinishedParts:
    """The filter pass's finished parts (one per input file, written whole): records, input bytes and the
    verdicts of every file done so far, each part read once (its footer and two small columns)."""

    def __init__(self, folder: Path, sizes: list[int]):
        self.folder, self.sizes = folder, sizes
        self.seen: set[int] = set()
        self.records = self.bytes = 0
        self.by_stage: Counter[str] = Counter()
        self.by_reason: Counter[str] = Counter()
        self.not_documents: Counter[str] = Counter()

    def poll(self) -> None:
        for path in sorted(self.folder.glob("file-*.parquet")):
            index = int(path.stem.split("-")[1])
            if index in self.seen or index >= len(self.sizes):
                continue
            try:
                verdicts = pq.read_table(path, columns=["stage", "reason"])
            except OSError:  # replaced as we read it: the next poll reads it
                continue
            self.seen.add(index)
            self.records += verdicts.num_rows
            self.bytes += self.sizes[index]
            for stage, reason in zip(verdicts["stage"].to_pylist(), verdicts["reason"].to_pylist()):
                if stage == NOT_DOCUMENT:
                    self.not_documents[reason] += 1
                elif stage is not None:
                    self.by_stage[stage] += 1
                    self.by_reason[reason] += 1


class Tracker:
    """The run's progress and counts; `snapshot()` is what the console, progress.json and Prometheus show.
    Fed by the belt (passes, totals, the manifest's counts) and the engines (`tasks`)."""

    def __init__(self, stage_names: list[str], clock=time.time):
        self.stage_names = stage_names  # the per-document and dedup stages, in the belt's order
        self.clock = clock
        self.lock = threading.Lock()
        self.state = "running"
        self.started = clock()
        self.pass_name: str | None = None
        self.unit = "documents"
        self.documents_total: int | None = None
        self.bytes_total: int | None = None
        self.parts: FinishedParts | None = None
        self.files_total = 0
        self.step = 0
        self.tasks_done = self.tasks_total = 0
        self.step_since = self.pass_since = self.started
        self.done_at_step: tuple[float, float] = (0.0, 0.0)
        self.records_read = 0
        self.bytes_read = 0
        self.kept: int | None = None
        self.by_stage: Counter[str] = Counter()  # documents rejected
        self.by_reason: Counter[str] = Counter()
        self.not_documents: Counter[str] = Counter()  # records that are no document, by reason
        self.cpu_seconds: dict[str, float] = {}
        self.errors: Counter[str] = Counter()  # log level -> records
        self.on_pass = lambda: None  # called as each pass starts (the reporter writes progress.json)

    # --- fed by the belt

    def begin_pass(
        self, name: str, documents: int | None, size: int | None, parts: FinishedParts | None = None, unit="documents"
    ) -> None:
        with self.lock:
            self.pass_name, self.unit = name, unit
            self.documents_total, self.bytes_total, self.parts = documents, size, parts
            self.files_total = len(parts.sizes) if parts else 0
            self.step, self.tasks_done, self.tasks_total = 0, 0, 0
            self.pass_since = self.clock()
            if parts:
                parts.poll()  # parts a killed run left: done before this pass started
            self._restart_rate()
        self.on_pass()

    def add_cpu_seconds(self, seconds: dict[str, float]) -> None:
        with self.lock:
            for stage, value in seconds.items():
                self.cpu_seconds[stage] = self.cpu_seconds.get(stage, 0.0) + value

    def counted(self, manifest: dict) -> None:
        """The manifest's exact counts (after finalize), in place of those counted from finished parts."""
        counts = manifest["counts"]
        with self.lock:
            self.records_read = counts["records_read"]
            self.kept = counts["kept"]
            self.by_stage = Counter(counts["rejected"])
            self.by_reason = Counter(counts["rejected_by_reason"])
            self.not_documents = Counter(counts["not_documents"])

    def end_pass(self) -> None:
        with self.lock:
            self.pass_name, self.parts = None, None

    def finish(self, state: str) -> None:
        with self.lock:
            self.state, self.pass_name = state, None

    # --- fed by the engines

    def step_started(self) -> None:
        with self.lock:
            self.step += 1
            self.tasks_done = self.tasks_total = 0
            self._restart_rate()

    def tasks(self, done: int, total: int) -> None:
        with self.lock:
            self.tasks_done, self.tasks_total = done, total

    # --- read

    def _restart_rate(self) -> None:
        self.step_since = self.clock()
        self.done_at_step = self._done()

    def _fraction(self) -> float | None:
        if self.parts is not None:
            return self.parts.bytes / self.bytes_total if self.bytes_total else None
        return self.tasks_done / self.tasks_total if self.tasks_total else None

    def _done(self) -> tuple[float, float]:
        """Documents and bytes done in this pass: the filter pass's exact records and input bytes of the files
        finished; another pass's totals times the share of the current step's tasks finished."""
        if self.parts is not None:
            return float(self.parts.records), float(self.parts.bytes)
        fraction = self._fraction() or 0.0
        return fraction * (self.documents_total or 0), fraction * (self.bytes_total or 0)

    def poll(self) -> None:
        """Read the filter pass's newly finished parts (the reporter thread calls this)."""
        with self.lock:
            if self.parts is not None:
                self.parts.poll()
                self.records_read = self.parts.records
                self.bytes_read = self.parts.bytes
                self.by_stage = Counter(self.parts.by_stage)
                self.by_reason = Counter(self.parts.by_reason)
                self.not_documents = Counter(self.parts.not_documents)

    def snapshot(self) -> dict:
        """Everything shown, as plain JSON data: progress.json, Prometheus and the console read this."""
        with self.lock:
            now = self.clock()
            documents, size = self._done()
            seconds = max(now - self.step_since, 1e-9)
            rate = (documents - self.done_at_step[0]) / seconds
            byte_rate = (size - self.done_at_step[1]) / seconds
            total = self.documents_total
            if self.parts is not None and total is None and size:  # records by bytes, from the files finished
                total = round(documents / size * (self.bytes_total or 0))
            left = None
            if self.bytes_total and byte_rate > 0:
                left = (self.bytes_total - size) / byte_rate
            elif total and rate > 0:
                left = (total - documents) / rate
            fraction = self._fraction()
            return {
                "state": self.state,
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "updated": now,
                "started": self.started,
                "elapsed_s": round(now - self.started, 3),
                "pass": None
                if self.pass_name is None
                else {
                    "name": self.pass_name,
                    "unit": self.unit,
                    "step": self.step,
                    "tasks_done": self.tasks_done,
                    "tasks_total": self.tasks_total,
                    "files_done": len(self.parts.seen) if self.parts else None,
                    "files_total": self.files_total or None,
                    "documents_done": round(documents),
                    "documents_total": total,
                    "documents_total_estimated": self.parts is not None and self.documents_total is None,
                    "bytes_done": round(size),
                    "bytes_total": self.bytes_total,
                    "fraction": None if fraction is None else round(min(fraction, 1.0), 6),
                    "documents_per_s": round(rate, 3),
                    "bytes_per_s": round(byte_rate, 3),
                    "seconds_left": None if left is None else round(max(left, 0.0), 1),
                    "elapsed_s": round(now - self.pass_since, 3),
                },
                "counts": self._counts(),
                "cpu_seconds": {stage: round(s, 3) for stage, s in sorted(self.cpu_seconds.items())},
                "errors": dict(sorted(self.errors.items())),
            }

    def _counts(self) -> dict:
        """Records read, documents in and rejected per stage (as the manifest counts them), kept so far."""
        documents = self.records_read - sum(self.not_documents.values())
        stages, alive = {}, documents
        for stage in self.stage_names:
            stages[stage] = {"rows_in": alive, "rejected": self.by_stage.get(stage, 0)}
            alive -= self.by_stage.get(stage, 0)
        return {
            "records_read": self.records_read,
            "bytes_read": self.bytes_read,
            "not_documents": dict(sorted(self.not_documents.items())),
            "documents": documents,
            "kept": self.kept if self.kept is not None else alive,
            "rejected": {stage: n for stage, n in sorted(self.by_stage.items()) if n},
            "rejected_by_reason": dict(sorted(self.by_reason.items())),
            "stages": stages,
        }


def line(snapshot: dict) -> str | None:
    """The console's progress line for a pass under way, e.g. `filter: 2 of 3 files, 1,204 of ~1,900 documents
    (63%), 0.1 of 0.2 MB, 410 documents/s, 0.1 MB/s, 0:00:03 left`."""
    now = snapshot["pass"]
    if now is None:
        return None
    name = now["name"] + (f" (step {now['step']})" if now["files_total"] is None and now["step"] > 1 else "")
    parts = []
    if now["files_total"]:
        parts.append(f"{now['files_done']} of {now['files_total']} files")
    total = now["documents_total"]
    about = "~" if now["documents_total_estimated"] else ""
    of = f" of {about}{total:,}" if total is not None else ""
    share = f" ({now['fraction']:.0%})" if now["fraction"] is not None else ""
    parts.append(f"{now['documents_done']:,}{of} {now['unit']}{share}")
    if now["bytes_total"]:
        parts.append(f"{now['bytes_done'] / 1e6:,.1f} of {now['bytes_total'] / 1e6:,.1f} MB")
    parts.append(f"{now['documents_per_s']:,.0f} {now['unit']}/s")
    if now["bytes_total"]:
        parts.append(f"{now['bytes_per_s'] / 1e6:,.1f} MB/s")
    parts.append(f"{clock_time(now['seconds_left'])} left" if now["seconds_left"] is not None else "time left unknown")
    return f"{name}: " + ", ".join(parts)


def clock_time(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class ErrorCount(logging.Handler):
    """Counts the run's warnings and errors (crawlbelt's and Ray's log records at WARNING and above)."""

    def __init__(self, tracker: Tracker):
        super().__init__(level=logging.WARNING)
        self.tracker = tracker

    def emit(self, record: logging.LogRecord) -> None:
        with self.tracker.lock:
            self.tracker.errors[record.levelname.lower()] += 1


class Reporter:
    """While a run goes on (`with Reporter(...)`): the progress line on the console, progress.json in `work`,
    and the metrics server if `metrics.port` is set. The current tracker is the module's (`tasks`)."""

    def __init__(self, config, tracker: Tracker, work: Path, stream=None):
        self.config, self.tracker, self.work = config, tracker, work
        self.stream = stream or sys.stderr
        self.terminal = self.stream.isatty()
        self.shown = False  # a progress line is on the terminal, to be cleared before a log line
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        self.server: Any = None  # pipeline.metrics.Server, imported only with metrics.port
        self.errors = ErrorCount(tracker)
        self.clearing = _ClearLine(self)
        self.write_lock = threading.Lock()
        self.writing = True

    def __enter__(self) -> Reporter:
        global _current, _reporter
        _current, _reporter = self.tracker, self
        self.tracker.on_pass = self._write
        if self.config.metrics.port is not None:
            from pipeline.metrics import serve

            self.server = serve(self.config.metrics.port, self.tracker)
            log.info(
                "metrics: Prometheus's text format at http://%s:%d/metrics", socket.gethostname(), self.server.port
            )
        for name in ("crawlbelt", "ray"):
            logging.getLogger(name).addHandler(self.errors)
        for handler in logging.getLogger().handlers:
            handler.addFilter(self.clearing)
        self.thread = threading.Thread(target=self._run, name="crawlbelt-progress", daemon=True)
        self.thread.start()
        return self

    def __exit__(self, kind, error, trace) -> None:
        global _current, _reporter
        self.tracker.finish("failed" if error is not None else "complete")
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=10)
        self._write()  # a failed run's last state stays in _work/progress.json
        self._clear()
        for name in ("crawlbelt", "ray"):
            logging.getLogger(name).removeHandler(self.errors)
        for handler in logging.getLogger().handlers:
            handler.removeFilter(self.clearing)
        if self.server is not None:
            self.server.close()
        _current = _reporter = None

    def _run(self) -> None:
        every = REDRAW_EVERY_S if self.terminal else min(self.config.progress.log_every_s, WRITE_EVERY_S)
        last_log = last_write = time.monotonic()
        while not self.stop.wait(every):
            try:
                self.tracker.poll()
                snapshot = self.tracker.snapshot()
                now = time.monotonic()
                shown = line(snapshot)
                if self.terminal and shown:
                    self.stream.write("\r" + shown[: _width()] + "\x1b[K")
                    self.stream.flush()
                    self.shown = True
                elif shown and now - last_log >= self.config.progress.log_every_s:
                    log.info("progress: %s", shown)
                    last_log = now
                if now - last_write >= WRITE_EVERY_S:
                    self._write(snapshot)
                    last_write = now
            except Exception as error:  # noqa: BLE001 (progress must never end a run)
                log.debug("progress: %s", error)

    def _write(self, snapshot: dict | None = None) -> None:
        text = json.dumps(snapshot or self.tracker.snapshot(), indent=2) + "\n"
        with self.write_lock:
            if not self.writing or not self.work.is_dir():  # a finished run's _work is gone: its manifest says the rest
                return
            try:
                write_atomic(self.work / PROGRESS_FILE, text)
            except OSError as error:  # a full disk: the run says so itself
                log.debug("progress.json: %s", error)

    def _clear(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


class _ClearLine(logging.Filter):
    """Before a log line reaches the terminal, the progress line is cleared (the next redraw brings it back)."""

    def __init__(self, reporter: Reporter):
        super().__init__()
        self.reporter = reporter

    def filter(self, record: logging.LogRecord) -> bool:
        self.reporter._clear()
        return True


def _width() -> int:
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns - 1
    except OSError:
        return 159


def file_sizes(files: list[str], storage_settings) -> list[int]:
    """The size of each input file (an s3:// one by its listing), for the filter pass's bytes."""
    from stages.file_names import real_path

    sizes = {f: os.path.getsize(real_path(f)) for f in files if not f.startswith("s3://")}
    remote = [f for f in files if f.startswith("s3://")]
    if remote:
        from pipeline.storage import s3_filesystem

        infos = s3_filesystem(storage_settings).get_file_info([f.removeprefix("s3://") for f in remote])
        sizes.update({f: info.size or 0 for f, info in zip(remote, infos)})
    return [sizes[f] for f in files]


def parquet_size(folder: Path) -> tuple[int, int]:
    """Rows and bytes of a folder's Parquet files (from their footers)."""
    paths = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    return sum(pq.ParquetFile(p).metadata.num_rows for p in paths), sum(p.stat().st_size for p in paths)
