"""A user's own per-document stage, named by import path in the config's `stages:` list.

    stages:
      - extract
      - use: mypackage.filters:NoLoremIpsum   # module:Class or module:function, importable on every node
        with: {max_hits: 2}                   # its keyword arguments
        name: no_lorem                        # optional: its reject codes are `no_lorem:<reason>`

The contract (docs/stages.md has a worked example): the stage is called with an Arrow table of the rows still
alive and returns a mapping with one value per row for each column it adds (declared in its `adds`, name ->
Arrow type name), and optionally `reject` (a reason, or None to keep the row) and `detail` (free text). It
never drops rows. A class may have `setup()`, run once per worker before its first batch (a model load).

A stage that raises on a batch, or runs past `timeout_s` (10) seconds per row on it, is run again row by row:
the rows that raise become `NAME:error` with the exception in `detail`, those that run past `timeout_s` alone
`NAME:timeout`, the others get their results (stages/time_limit.py; a call stuck in C code ends the worker).
A stage that raises or times out on more than `max_error_share` of the rows a worker has given it is broken,
not the data: it stops the run with StageError and its first exception. A result that breaks the contract (not a mapping, a column missing or undeclared, a wrong length
or type, an empty reject reason) stops the run with StageError naming the stage. With a `threshold`, a row
without a score (null or NaN) is `NAME:no_score`: it cannot be shown to reach the threshold.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import math
import re
import sys
from collections.abc import Mapping
from importlib import metadata

import pyarrow as pa

from stages.ledger import run_on_alive
from stages.time_limit import TimeLimitExceeded, call_with_time_limit

RESULT_KEYS = ("reject", "detail")
_MAX_DETAIL = 500
MAX_ERROR_SHARE = 0.5  # default: a stage raising on more than half of its rows is broken
TIMEOUT_S = 10.0  # default: seconds a stage may spend on one document


class StageError(RuntimeError):
    """A user stage broke its contract or could not start: one line naming it."""


def import_target(target: str):
    """The object named `module:attribute` (dots allowed in both parts)."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise StageError(f"{target!r}: expected module:Class or module:function")
    try:
        found = importlib.import_module(module_name)
    except Exception as error:  # ImportError, or the module itself failing
        raise StageError(f"{target!r}: cannot import {module_name!r} ({type(error).__name__}: {error})") from None
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise StageError(f"{target!r}: module {module_name!r} has no {attribute!r}")
        found = getattr(found, part)
    return found


def _arrow_type(name: str, type_name) -> pa.DataType:
    if isinstance(type_name, pa.DataType):
        return type_name
    try:
        return pa.type_for_alias(str(type_name))
    except ValueError:
        raise StageError(
            f"column {name!r}: {type_name!r} is not an Arrow type name (e.g. float64, int64, string, bool)"
        ) from None


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


class UserStage:
    """Runs a user's stage under the contract above. Pickled to the workers without the user's object, which
    each worker builds (and sets up) before its first batch."""

    def __init__(
        self,
        target: str,
        arguments: dict | None = None,
        name: str | None = None,
        adds: dict | None = None,
        threshold: float | None = None,
        max_error_share: float | None = None,
        timeout_s: float | None = None,
    ):
        self.target = target
        self.arguments = dict(arguments or {})
        found = import_target(target)
        self.is_class = inspect.isclass(found)
        declared = adds if adds is not None else getattr(found, "adds", {})
        if not isinstance(declared, Mapping):
            raise StageError(f"{target!r}: `adds` must map column names to Arrow type names, got {declared!r}")
        self.adds = {str(column): _arrow_type(column, type_name) for column, type_name in declared.items()}
        for column in self.adds:
            if column in RESULT_KEYS:
                raise StageError(
                    f"{target!r}: `adds` declares the column {column!r}, a key the stage contract keeps for its "
                    "result (`reject`, `detail`); give the column another name"
                )
        self.name = name or getattr(found, "name", None) or _snake(found.__name__)
        self.threshold = threshold
        self.max_error_share = MAX_ERROR_SHARE if max_error_share is None else max_error_share
        self.timeout_s = TIMEOUT_S if timeout_s is None else timeout_s
        self._rows = self._errors = 0  # on this worker so far: the rows given and the rows that raised
        self._first_error: str | None = None
        self._judging = True  # False on the probe batch, whose made-up rows a stage may fairly fail on
        self.probe_errors: str | None = None  # what the probe batch's rows raised, for `validate` to say
        self.score_column = f"score_{self.name}"
        if threshold is not None and self.score_column not in self.adds:
            raise StageError(f"{target!r}: a threshold needs the stage to add the column {self.score_column!r}")
        score_type = self.adds.get(self.score_column)
        if threshold is not None and not (pa.types.is_floating(score_type) or pa.types.is_integer(score_type)):
            raise StageError(f"{target!r}: a threshold needs {self.score_column!r} to be a number, not {score_type}")
        self._run = None

    @classmethod
    def from_entry(cls, entry: dict) -> UserStage:
        return cls(
            entry["use"],
            entry.get("with"),
            entry.get("name"),
            entry.get("adds"),
            entry.get("threshold"),
            entry.get("max_error_share"),
            entry.get("timeout_s"),
        )

    def __getstate__(self):
        return {**self.__dict__, "_run": None, "_rows": 0, "_errors": 0, "_first_error": None}

    def load(self):
        """Build the user's object and run its setup() (once per worker)."""
        if self._run is None:
            found = import_target(self.target)
            if self.is_class:
                try:
                    instance = found(**self.arguments)
                    if hasattr(instance, "setup"):
                        instance.setup()
                except Exception as error:
                    raise StageError(f"stage {self.name} ({self.target}) failed to start: {_describe(error)}") from None
                self._run = instance
            else:
                self._run = lambda batch: found(batch, **self.arguments)
        return self._run

    def probe(self, batch: pa.Table) -> None:
        """Set up and run on a made-up batch: a contract error is a StageError; rows that raise are not judged
        against max_error_share (a stage made for one kind of document may fail on these), but noted."""
        self._judging = False
        try:
            self(batch)
        finally:
            self._judging = True
        if self._errors:
            self.probe_errors = f"{self._errors} of {self._rows} rows, the first: {self._first_error}"
        self._rows = self._errors = 0
        self._first_error = None

    def fingerprint(self) -> dict:
        """What shapes its verdicts: the import path, arguments, and the code's package version or file hash."""
        module_name = self.target.partition(":")[0]
        module = sys.modules.get(module_name) or importlib.import_module(module_name)
        top = module_name.split(".")[0]
        versions = {dist: metadata.version(dist) for dist in metadata.packages_distributions().get(top, [])}
        path = getattr(module, "__file__", None)
        code = hashlib.sha256(open(path, "rb").read()).hexdigest() if path else None
        return {
            "use": self.target,
            "with": self.arguments,
            "name": self.name,
            "threshold": self.threshold,
            "timeout_s": self.timeout_s,
            "adds": {column: str(type_) for column, type_ in self.adds.items()},
            "versions": versions,
            "code": code,
        }

    def __call__(self, batch: pa.Table) -> pa.Table:
        return run_on_alive(batch, self.name, self._compute, self.adds)

    def _compute(self, alive: pa.Table):
        run = self.load()
        try:  # a batch may take timeout_s per row; over that, the rows are timed one by one
            result = call_with_time_limit(self.timeout_s * alive.num_rows, run, alive)
        except (Exception, TimeLimitExceeded):  # find the rows that raise or run over: only they are rejected
            return self._row_by_row(run, alive)
        columns, reasons, details = self._checked(result, alive.num_rows)
        self._count_errors(alive.num_rows, 0, None)
        return columns, *self._with_threshold(columns, reasons, details)

    def _row_by_row(self, run, alive: pa.Table):
        columns: dict[str, list] = {column: [] for column in self.adds}
        reasons, details = [], []
        for i in range(alive.num_rows):
            try:
                one, reason, detail = self._checked(call_with_time_limit(self.timeout_s, run, alive.slice(i, 1)), 1)
            except StageError:
                raise
            except TimeLimitExceeded:
                over = f"over its {self.timeout_s:g} s limit on one document"
                one, reason, detail = self._nulls(), ["timeout"], [over]
            except Exception as error:
                one, reason, detail = self._nulls(), ["error"], [_describe(error)]
            for column in columns:
                columns[column].append(one[column][0].as_py())
            reasons.append(None if reason is None else reason[0])
            details.append(None if detail is None else detail[0])
        errors = [d for r, d in zip(reasons, details) if r in ("error", "timeout")]
        self._count_errors(alive.num_rows, len(errors), errors[0] if errors else None)
        columns = {column: pa.array(values, self.adds[column]) for column, values in columns.items()}
        reasons = [None if r is None else self._code(r) for r in reasons]
        return columns, *self._with_threshold(columns, reasons, details)

    def _nulls(self) -> dict[str, pa.Array]:
        return {column: pa.nulls(1, type_) for column, type_ in self.adds.items()}

    def _checked(self, result, rows: int):
        """The result's columns (as declared), reject codes and details; StageError if it breaks the contract."""
        where = f"stage {self.name} ({self.target})"
        if not isinstance(result, Mapping):
            raise StageError(
                f"{where} returned {type(result).__name__}, expected a mapping of columns (and `reject`, `detail`)"
            )
        unknown = [key for key in result if key not in self.adds and key not in RESULT_KEYS]
        if unknown:
            raise StageError(
                f"{where} returned the column {unknown[0]!r}, which it does not declare in `adds` "
                f"(it declares {', '.join(self.adds) or 'none'})"
            )
        missing = [column for column in self.adds if column not in result]
        if missing:
            raise StageError(f"{where} did not return its column {missing[0]!r}")
        for key, values in result.items():
            if values is None and key in RESULT_KEYS:
                continue
            if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
                raise StageError(f"{where} returned {type(values).__name__} for {key!r}, expected one value per row")
            if len(values) != rows:
                raise StageError(f"{where} returned {len(values)} values of {key!r} for {rows} rows")
        columns = {}
        for column, type_ in self.adds.items():
            try:
                columns[column] = _as_column(result[column], type_)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError) as error:
                raise StageError(f"{where}: its column {column!r} is not {type_} ({error})") from None
        reasons = details = None
        if result.get("reject") is not None:
            if any(r is not None and not isinstance(r, str) for r in result["reject"]):
                raise StageError(f"{where}: `reject` must hold a reason (a string) or None per row")
            if any(r is not None and not r.strip() for r in result["reject"]):
                raise StageError(f"{where}: `reject` holds an empty reason; give a reason, or None to keep the row")
            reasons = [self._code(r) if r is not None else None for r in result["reject"]]
        if result.get("detail") is not None:
            details = [None if d is None else str(d)[:_MAX_DETAIL] for d in result["detail"]]
        return columns, reasons, details

    def _code(self, reason) -> str:
        reason = str(reason)
        return reason if reason.startswith(f"{self.name}:") else f"{self.name}:{reason}"

    def _count_errors(self, rows: int, errors: int, first_error: str | None) -> None:
        """StageError once more than `max_error_share` of the rows given on this worker raised: a stage that
        fails on most documents is broken (a model not loaded, a wrong column), and rejecting them all as
        NAME:error would end the run green with nothing kept."""
        self._rows += rows
        self._errors += errors
        self._first_error = self._first_error or first_error
        if self._judging and self._rows >= 2 and self._errors > self.max_error_share * self._rows:
            raise StageError(
                f"stage {self.name} ({self.target}) raised on {self._errors} of {self._rows} rows, more than its "
                f"max_error_share ({self.max_error_share:g}); the first: {self._first_error}"
            )

    def _with_threshold(self, columns, reasons, details):
        """A scorer's threshold: rows scoring below it (and not already rejected) are `NAME:below_threshold`;
        rows without a score (null or NaN) cannot reach it and are `NAME:no_score`."""
        if self.threshold is None:
            return reasons, details
        scores = columns[self.score_column].to_pylist()
        reasons = list(reasons or [None] * len(scores))
        details = list(details or [None] * len(scores))
        for i, score in enumerate(scores):
            if reasons[i] is not None:
                continue
            if score is None or math.isnan(score):
                reasons[i], details[i] = f"{self.name}:no_score", f"score {score}, threshold {self.threshold}"
            elif score < self.threshold:
                reasons[i], details[i] = f"{self.name}:below_threshold", f"score {score:.3f} < {self.threshold}"
        return reasons, details


def _as_column(values, type_: pa.DataType) -> pa.Array:
    """A stage's values as an array of the declared type. Arrow arrays (pyarrow.compute gives int32 lengths,
    often chunked) are cast safely: a value the type cannot hold is refused (ArrowInvalid), never cut."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        return values.cast(type_)
    return pa.array(values, type_)


def _describe(error: BaseException) -> str:
    text = f"{type(error).__name__}: {' '.join(str(error).split())}"
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 3] + "..."
