"""The engine seam: the data-parallel primitives the passes (filtering, dedup, finalize, tokens) are written in,
run by the engine the config names (`engine: ray | spark`). Each engine is one module, the only one that
knows it: pipeline/engines/engine_ray.py and pipeline/engines/engine_spark.py, with the same functions.

The primitives are plain functions over Arrow tables in, Arrow tables out (docs/design.md, "The engine seam, and Spark").
A `source` of rows is either a folder of Parquet files (read a file per task, a row group at a time,
`columns` only) or a list of items (dicts: file paths, jobs), split into `tasks` tasks, one per item by
default; a function over items gets one task's items as one table.

    map_items(function, items, resources)         function(item) per item, one task each: results with `node`
    map_to_parquet(source, fn, out, ...)          every batch through fn, written as Parquet files in `out`
    map_to_driver(source, fn, columns=...)        every batch through fn, streamed to the driver
    group_to_table(source, by, partitions, fn, schema, before=..., columns=...)
                                                  rows grouped by `by`, fn per group, one table on the driver
    group_to_parquet(source, by, partitions, fn, out, before=..., columns=...)
                                                  the same, written as Parquet files in `out`
    connected_components(edges, out)              (node, label) of the graph whose edges are Parquet in `edges`
    Shared(value)                                 a value sent once to every worker; `.value` reads it
    cpu_count(), nodes_alive()
    worker_died(error)                            whether a task failed because its worker process died
    failed_item(error)                            which item's task that was, where the engine's error says

and to run a belt: start(config), watch(config) (a context that notices lost nodes), stop().
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

ENGINES = ("ray", "spark")
_current: ModuleType | None = None
# A Ctrl-C that Python could not raise: it landed in a finalizer (py4j's weakref callbacks, PySpark's SIGINT
# handler raising there), where Python prints it and goes on. The run still stops, at its next primitive.
_swallowed_interrupt = False
_unraisablehook = sys.unraisablehook


def use(name: str) -> ModuleType:
    """Make `name` the engine the primitives run on (imported only now: a Ray run never imports Spark)."""
    global _current
    if name not in ENGINES:
        raise ValueError(f"engine {name!r}: expected one of {', '.join(ENGINES)}")
    _current = importlib.import_module(f"pipeline.engines.engine_{name}")
    return _current


def current() -> ModuleType:
    """The engine in use; Ray until a run or test says otherwise."""
    if _swallowed_interrupt:
        raise KeyboardInterrupt
    return _current or use("ray")


class EngineStartError(RuntimeError):
    """The engine did not start (an embedded Ray timing out on a loaded machine, Spark's JVM failing): one line."""


def start_failed(engine: str, error: Exception) -> EngineStartError:
    """One line for an engine's start failing: the first sentences of its error, whitespace collapsed, bounded."""
    said = " ".join(str(error).split())[:300] or type(error).__name__
    return EngineStartError(f"{engine} did not start: {said} (a machine under load may start it on a rerun)")


def start(config) -> None:
    """Start (or join) the engine `config.engine` names, and check that it can run the belt's tasks."""
    keep_swallowed_interrupts()
    use(config.engine).start(config)


def keep_swallowed_interrupts() -> None:
    """From now on, a Ctrl-C that Python swallows stops the run at its next primitive; one from before is
    forgotten (a process that runs the belt again, as the tests do)."""
    global _swallowed_interrupt, _unraisablehook
    _swallowed_interrupt = False
    if sys.unraisablehook is not _keep_interrupt:
        _unraisablehook, sys.unraisablehook = sys.unraisablehook, _keep_interrupt


def interrupted() -> bool:
    """Whether a Ctrl-C that Python swallowed is still owed (an engine's error over it is the interrupt's)."""
    return _swallowed_interrupt


def _keep_interrupt(unraisable) -> None:
    """sys.unraisablehook: remember a swallowed Ctrl-C (said once, by the run's last line), pass on the rest."""
    global _swallowed_interrupt
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        _swallowed_interrupt = True
    else:
        _unraisablehook(unraisable)


def stop() -> None:
    if _current is not None:
        _current.stop()


def watch(config):
    return current().watch(config)


def map_items(*args, **kwargs):
    return current().map_items(*args, **kwargs)


def map_to_parquet(*args, **kwargs):
    return current().map_to_parquet(*args, **kwargs)


def map_to_driver(*args, **kwargs):
    return current().map_to_driver(*args, **kwargs)


def group_to_table(*args, **kwargs):
    return current().group_to_table(*args, **kwargs)


def group_to_parquet(*args, **kwargs):
    return current().group_to_parquet(*args, **kwargs)


def connected_components(*args, **kwargs):
    return current().connected_components(*args, **kwargs)


def Shared(value):  # noqa: N802 (used as a class: engine.Shared(value).value)
    return current().Shared(value)


def cpu_count() -> int:
    return current().cpu_count()


def nodes_alive() -> int:
    return current().nodes_alive()


def worker_died(error: BaseException) -> bool:
    return current().worker_died(error)


def failed_item(error: BaseException) -> int | None:
    return current().failed_item(error)


def error_chain(error: BaseException | None):
    """An error and the ones it was raised from, each once (a Ray task's error keeps its own as `cause`)."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = getattr(error, "cause", None) or error.__cause__ or error.__context__
