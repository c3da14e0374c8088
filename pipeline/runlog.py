"""OUTPUT/run.log: the run's resolved config, then every line its console shows (crawlbelt's lines, Python's
and Ray's warnings), each line with its time.

It is written while the run goes on, in OUT/_work/run.log, and moves into the new output at the commit, so
that it is replaced (or uploaded) with the rest. A run that fails leaves it in OUT/_work/run.log, with the
error's traceback, and notes that path on the error (the command line prints it); the next run starts a
new one there."""

from __future__ import annotations

import logging
import os
import threading
import textwrap
import traceback
from datetime import datetime
from pathlib import Path
from typing import TextIO

import yaml

from pipeline import redact

RUN_LOG = "run.log"
# The loggers whose lines reach the console: the root (crawlbelt's lines, Python's warnings) and Ray's own,
# which keep their records to themselves.
LOGGERS = ("", "ray", "ray.data")


class RunLog(logging.Handler):
    """A logging handler, while the run goes on (`with RunLog(config):`), for the loggers above. Lines logged
    before the output folder may be written (Ray starting, the resource check) wait until `open`."""

    lock: threading.RLock  # made by Handler.__init__ (typeshed allows None: a handler without createLock)

    def __init__(self, config) -> None:
        super().__init__()
        # Not the handler's formatter: ray.init sets that of every handler of the "ray" logger.
        self.layout = logging.Formatter("%(levelname)s %(name)s: %(message)s")
        self.path: Path | None = None
        self.file: TextIO | None = None
        self.waiting: list[str] = []
        resolved = yaml.safe_dump(config.to_dict(), sort_keys=False, allow_unicode=True)
        self.write(datetime.now(), "INFO crawlbelt: config (resolved):\n" + textwrap.indent(resolved, "  "))

    def __enter__(self) -> RunLog:
        for name in LOGGERS:
            logging.getLogger(name).addHandler(self)
        return self

    def __exit__(self, kind, error, trace) -> None:
        if error is not None:
            self.write(datetime.now(), "ERROR " + "".join(traceback.format_exception(error)))
            if self.path is not None:
                error.add_note(f"log: {self.path}")
        for name in LOGGERS:
            logging.getLogger(name).removeHandler(self)
        self.close()

    def emit(self, record: logging.LogRecord) -> None:
        self.write(datetime.fromtimestamp(record.created), self.layout.format(record))

    def write(self, when: datetime, text: str) -> None:
        """Each line of `text` with the time, credentials masked."""
        stamp = when.astimezone().isoformat(timespec="milliseconds")
        self._append([f"{stamp} {line}\n" for line in redact.text(text).rstrip("\n").split("\n")])

    def _append(self, lines: list[str]) -> None:
        with self.lock:
            if self.file is None:
                self.waiting += lines
                return
            try:
                self.file.writelines(lines)
                self.file.flush()
            except OSError:  # a full disk: the run goes on (and says so itself); the console has the lines
                pass

    def open(self, path: Path) -> None:
        """Start writing at `path` (a new file), the lines so far first."""
        with self.lock:
            self.file, self.path = open(path, "w", encoding="utf-8"), path
            lines, self.waiting = self.waiting, []
            self._append(lines)

    def move(self, path: Path) -> None:
        """Move the file to `path` on the same file system; the open file moves with its name, so later lines
        go on into it."""
        assert self.path is not None, "move before open"  # the belt opens the log before it moves it
        with self.lock:
            os.replace(self.path, path)
            self.path = path

    def close(self) -> None:
        with self.lock:
            if self.file is not None:
                try:
                    self.file.close()
                except OSError:  # the last lines did not fit on a full disk
                    pass
                self.file = None
        super().close()
