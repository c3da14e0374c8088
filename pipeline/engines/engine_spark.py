"""The Spark engine (engine: spark): the primitives of pipeline/engines/engine.py as Spark jobs. The only module, with
pipeline/engines/spark_components.py and pipeline/engines/spark_daemon.py, that knows Spark.

Every primitive is a DataFrame of work items (input files, jobs), one task per item unless said otherwise,
mapped with `DataFrame.mapInArrow`: the task runs the pass's function over Arrow tables, as on Ray. Rows
cross a shuffle as Arrow IPC bytes keyed by the grouping value, so that any Arrow type (unsigned ints,
fixed-size lists) goes through unchanged and each group gets its rows in the order of the source, whatever
Spark's partitioning: the same functions on the same rows give the same output bytes as on Ray.

A task writes its Parquet output itself, under a name made from its first item's index, so a task that
Spark reruns (its executor was lost) writes the same file again.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import socket
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import count
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline import progress
from pipeline.config import Config, ConfigError, RayConfig, ResourcesConfig
from pipeline.engines.engine import start_failed
from pipeline.engines.spark_components import connected_components as _components
from stages.table_rows import sort_rows

log = logging.getLogger("crawlbelt")
# pyspark checks for pandas, which the belt's Arrow functions do not use, and warns about pandas 3
warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
LOG_CONFIG = Path(__file__).with_name("spark-log4j2.properties")
_session: SparkSession | None = None

Source = Path | list[dict]
READ_BATCH = 4096  # rows of a Parquet source per function call, as on Ray
ITEMS = "index long, item binary"
PIECES = "key string, index long, seq long, piece long, payload binary"


def start(config: Config) -> None:
    """An embedded Spark on this machine (spark.master, local[*] by default), or, under spark-submit, the
    cluster spark-submit names, or a session already there (a notebook's, Databricks'). Executors run this
    Python unless PYSPARK_PYTHON says otherwise."""
    global _session
    if _session is not None:
        return
    active = SparkSession.getActiveSession()
    if active is not None:  # not ours to stop
        _session = active
        log.info("spark: the session already running, %s", active.sparkContext.master)
        return
    settings = config.spark
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started this driver: its --master wins
    builder = SparkSession.builder.appName(settings.app_name)
    conf = dict(settings.conf)
    if not submitted:
        check_master(settings.master)
        builder = builder.master(settings.master)
        if settings.master.startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # an embedded Spark listens on loopback only
            conf.setdefault("spark.ui.enabled", "false")
            # Spark's 200 shuffle partitions are for clusters; the components rounds' joins are all shuffles
            conf.setdefault("spark.sql.shuffle.partitions", str(4 * (os.cpu_count() or 1)))
            conf.setdefault("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG_CONFIG}")
    # crawlbelt's progress line (pipeline/progress.py) says per pass what Spark's stage bars say per stage
    conf.setdefault("spark.ui.showConsoleProgress", "false")
    conf.setdefault("spark.python.daemon.module", "pipeline.engines.spark_daemon")
    for key, value in conf.items():
        builder = builder.config(key, value)
    for key, unused in (("ray", config.ray != RayConfig()), ("resources", config.resources != ResourcesConfig())):
        if unused:  # a config written for both engines is fine; say what this one does not use
            log.warning(
                "%s: Ray settings, not used by engine: spark (executors' cores and memory are Spark settings: "
                "spark.conf or spark-submit's --executor-cores, --executor-memory)",
                key,
            )
    try:
        _session = builder.getOrCreate()
    except Exception as error:  # PySpark's own errors: the JVM gateway exiting, a setting the JVM refuses
        raise start_failed("Spark", error) from None
    _session.sparkContext.setLogLevel("ERROR")  # a failed task's error reaches the driver as an exception
    logging.getLogger().addFilter(_not_py4j)
    context = _session.sparkContext
    master = str(context.master)
    where = "submitted to" if submitted else "embedded," if master.startswith("local") else "on"
    log.info("spark: %s %s, %d cores", where, master, context.defaultParallelism)


def check_master(master: str, timeout_s: float = 5.0) -> None:
    """ConfigError unless `master` is a master URL Spark knows and, for a standalone cluster (spark://), one of
    its masters answers: else Spark prints a Java trace, or tries for a minute and then one more."""
    if master == "yarn" or master.startswith("k8s://") or re.fullmatch(r"local(-cluster)?(\[[^\]]+\])?", master):
        return
    if not re.fullmatch(r"spark://[^/:,]+:\d+(,[^/:,]+:\d+)*", master):
        raise ConfigError(f"spark.master {master!r}: expected local[N], spark://HOST:PORT, yarn or k8s://...")
    errors = []
    for host, port in (part.rsplit(":", 1) for part in master.removeprefix("spark://").split(",")):
        try:
            socket.create_connection((host, int(port)), timeout=timeout_s).close()
            return
        except OSError as error:
            errors.append(error.strerror or str(error))
    raise ConfigError(f"spark.master {master!r}: no Spark master answers there ({errors[0]})")


def _not_py4j(record: logging.LogRecord) -> bool:
    """py4j logs the calls that Ctrl-C (or a JVM going away) cuts off to the root logger, each with its
    traceback; the interrupt, or the error, reaches the belt anyway and is said in one line."""
    return "py4j" not in Path(record.pathname).parts


def stop() -> None:
    """Stop the Spark this process started (engine.stop: tests; a run's process ends with it anyway)."""
    global _session
    if _session is not None:
        _session.stop()
        _session = None


class SparkWatch:
    """What the belt asks of a watch on Ray (engine_ray.NodeWatch). Spark reruns a lost executor's tasks on
    the executors left (spark.task.maxFailures); it has no lost node for the belt to start over from."""

    lost: dict = {}

    def __enter__(self) -> SparkWatch:
        return self

    def __exit__(self, *exc) -> None:
        pass

    def progress(self) -> None:
        pass

    def settle(self, error: BaseException) -> None:
        pass

    def lost_line(self) -> None:
        return None


def watch(config: Config) -> SparkWatch:
    return SparkWatch()


def session() -> SparkSession:
    if _session is None:
        raise RuntimeError("the Spark engine is not started (engine.start)")
    return _session


def cpu_count() -> int:
    """The cores the application has: its executors' (or local[N]'s)."""
    return session().sparkContext.defaultParallelism


def nodes_alive() -> int:
    """The machines the executors (and the driver) are on."""
    executors = session().sparkContext._jsc.sc().statusTracker().getExecutorInfos()  # the driver's too
    return len({info.host() for info in executors})


def worker_died(error: BaseException) -> bool:
    """Whether a task failed because its Python worker process died (on every one of its
    spark.task.maxFailures tries; an embedded Spark tries once)."""
    return "Python worker exited unexpectedly" in str(error)


def failed_item(error: BaseException) -> int | None:
    """The position of the item whose task ended the job, from Spark's "Task N in stage S failed" (a map_items
    task is one partition of one item). Spark then kills the workers of the other tasks still running, so
    the driver cannot tell the one that died on its own from those by their processes."""
    found = re.search(r"\bTask (\d+) in stage [\d.]+ failed", str(error))
    return int(found.group(1)) if found else None


class Shared:
    """A value sent once to every executor (a broadcast variable); `value` reads it there."""

    def __init__(self, value):
        self.broadcast = session().sparkContext.broadcast(value)

    @property
    def value(self):
        return self.broadcast.value


# ---------------------------------------------------------------------------------------------
# Primitives


def map_items(function: Callable[[dict], dict], items: list[dict], resources=None, pool: bool = False) -> list[dict]:
    """`function(item)` for every item, one task per item, each result with the `node` (host) that ran it.
    `pool` (a step of a transformers scorer): the same tasks; what the function loads stays in the reused
    Python worker of each executor core (spark.python.worker.reuse) from one item to the next."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for _, item in _items(batches):
            result = {**function(item), "node": socket.gethostname()}
            yield pa.RecordBatch.from_pydict({"result": [_item_to_bytes(result)]})

    with _tracked():
        rows = _frame(items, len(items)).mapInArrow(run, "result binary").collect()
    return [_item_from_bytes(row.result) for row in rows]


def map_to_parquet(
    source: Source,
    fn: Callable,
    out: Path,
    *,
    columns: list[str] | None = None,
    tasks: int | None = None,
    resources=None,
) -> None:
    """Every batch of `source` through `fn`, each task's results written as one Parquet file in `out`."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    folder = not isinstance(source, list)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        first, rows = None, 0
        writer, tmp = None, None
        try:
            for (index, _), table in _inputs(batches, folder, columns):
                first = index if first is None else first
                for result in _results(fn(table)):
                    if not result.num_rows:
                        continue
                    if writer is None:
                        tmp = out / f".part-{first:05d}.{os.getpid()}.tmp"  # a second attempt's is its own
                        writer = pq.ParquetWriter(tmp, result.schema)
                    writer.write_table(result.cast(writer.schema))
                    rows += result.num_rows
        finally:
            if writer is not None:
                writer.close()
        if tmp is not None:
            os.replace(tmp, out / f"part-{first:05d}.parquet")
        yield pa.RecordBatch.from_pydict({"rows": [rows]})

    with _tracked():
        _source_frame(source, tasks).mapInArrow(run, "rows long").collect()


def map_to_driver(source: Source, fn: Callable, *, columns: list[str] | None = None) -> Iterable[pa.Table]:
    """Every batch of `source` through `fn` on the executors; the results streamed to the driver a task's
    output at a time (the next one computed meanwhile), so that it never holds them all."""
    folder = not isinstance(source, list)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for _, table in _inputs(batches, folder, columns):
            for result in _results(fn(table)):
                yield pa.RecordBatch.from_pydict({"payload": [_to_bytes(result)]})

    with _tracked():
        rows = _source_frame(source, None).mapInArrow(run, "payload binary").toLocalIterator(prefetchPartitions=True)
        for row in rows:
            yield _from_bytes(row.payload)


def group_to_table(
    source: Source,
    by: str,
    partitions: int,
    fn: Callable,
    schema: pa.Schema,
    *,
    before: Callable | None = None,
    columns: list[str] | None = None,
) -> pa.Table:
    """The rows of `source` (each batch first through `before`, which adds the column `by`), grouped by `by`
    over `partitions` partitions; `fn` maps all rows of one value of `by` (in the source's order) to a table.
    Their results, as one table on the driver (empty with `schema` when there are none)."""

    def run(group: pa.Table) -> pa.Table:
        payloads = [_to_bytes(r) for r in _results(fn(_group_rows(group))) if r.num_rows]
        return pa.table({"payload": pa.array(payloads, pa.binary())})

    with _tracked():
        rows = _shuffled(source, by, partitions, before, columns).applyInArrow(run, "payload binary").collect()
    tables = [_from_bytes(row.payload) for row in rows]
    return pa.concat_tables(tables).select(schema.names).cast(schema) if tables else schema.empty_table()


def group_to_parquet(
    source: Source,
    by: str,
    partitions: int,
    fn: Callable,
    out: Path,
    *,
    before: Callable | None = None,
    columns: list[str] | None = None,
) -> None:
    """As group_to_table, each group's results written as one Parquet file in the folder `out` instead."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)

    def run(group: pa.Table) -> pa.Table:
        name = "part-" + hashlib.sha1(group["key"][0].as_py().encode()).hexdigest()[:16] + ".parquet"
        results = [r for r in _results(fn(_group_rows(group))) if r.num_rows]
        if results:
            table = pa.concat_tables([r.cast(results[0].schema) for r in results])
            tmp = out / f".{name}.{os.getpid()}.tmp"
            pq.write_table(table, tmp)
            os.replace(tmp, out / name)
        return pa.table({"rows": [sum(r.num_rows for r in results)]})

    with _tracked():
        _shuffled(source, by, partitions, before, columns).applyInArrow(run, "rows long").collect()


def connected_components(edges: Path, nodes: np.ndarray) -> pa.Table:
    """(node, label) for every node of the graph whose (order, linked_to) edges are the Parquet files in
    `edges` that is not the smallest node of its component, with that smallest node as its label: large-star
    and small-star rounds on the executors (pipeline/engines/spark_components.py); only the result comes back."""
    context = session().sparkContext
    if not str(context.master).startswith("local"):  # a lost executor's rounds are read back from shared files
        context.setCheckpointDir(str(Path(edges).parent / "spark-checkpoints"))
    frame = session().read.parquet(str(edges)).select(F.col("order").alias("a"), F.col("linked_to").alias("b"))
    labels = _components(frame).where(F.col("node") != F.col("label")).orderBy("node")
    table = labels.toArrow()
    return pa.table({"node": table["node"].cast(pa.int64()), "label": table["label"].cast(pa.int64())})


# ---------------------------------------------------------------------------------------------
# Progress

_calls = count()
POLL_S = 0.5


@contextmanager
def _tracked():
    """A primitive's Spark jobs, in a job group of their own, report their progress (pipeline/progress.py) from
    Spark's status tracker on the driver: the tasks finished of their first stage, the one that reads the
    primitive's items (an input file or a work item per task)."""
    context = session().sparkContext
    group = f"crawlbelt-{next(_calls)}"
    context.setJobGroup(group, "crawlbelt")
    progress.step_started()
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(POLL_S):
            _report(group)

    thread = threading.Thread(target=poll, name="crawlbelt-spark-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]  # None clears it


def _report(group: str) -> None:
    try:
        tracker = session().sparkContext.statusTracker()
        jobs = [tracker.getJobInfo(job) for job in tracker.getJobIdsForGroup(group)]
        stages = sorted(stage for job in jobs if job is not None for stage in job.stageIds)
        first = tracker.getStageInfo(stages[0]) if stages else None
    except Exception as error:  # noqa: BLE001 (the JVM going away as a run ends: progress must not fail it)
        log.debug("spark progress: %s", error)
        return
    if first is not None and first.numTasks:
        progress.tasks(first.numCompletedTasks, first.numTasks)


# ---------------------------------------------------------------------------------------------
# Work items, batches and shuffles


def _frame(items: list, tasks: int) -> DataFrame:
    """The items as a DataFrame of (index, item as Arrow IPC bytes) in `tasks` partitions of consecutive items."""
    rows = [(i, _item_to_bytes(item)) for i, item in enumerate(items)]
    return session().createDataFrame(session().sparkContext.parallelize(rows, max(1, tasks)), ITEMS)


def _source_frame(source: Source, tasks: int | None) -> DataFrame:
    if isinstance(source, list):
        return _frame(source, tasks or len(source))
    paths = sorted(str(p) for p in Path(source).glob("*.parquet"))
    return _frame([{"path": p} for p in paths], len(paths))


def _items(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, dict]]:
    for batch in batches:
        yield from zip(batch.column("index").to_pylist(), map(_item_from_bytes, batch.column("item").to_pylist()))


def _inputs(batches: Iterator[pa.RecordBatch], folder: bool, columns: list[str] | None):
    """((item index, batch number), table) for a task: a folder source's files a row group batch at a time;
    a list source's items all as one table, as a Ray task gets them."""
    if not folder:
        items = list(_items(batches))
        if items:
            yield (items[0][0], 0), pa.Table.from_pylist([item for _, item in items])
        return
    for index, item in _items(batches):
        for seq, batch in enumerate(pq.ParquetFile(item["path"]).iter_batches(batch_size=READ_BATCH, columns=columns)):
            yield (index, seq), pa.Table.from_batches([batch])


def _results(out) -> Iterator[pa.Table]:
    """A function's result: a table, or a generator of tables."""
    if isinstance(out, pa.Table):
        yield out
    else:
        yield from out


def _shuffled(source: Source, by: str, partitions: int, before: Callable | None, columns: list[str] | None):
    """The source's rows, through `before`, cut by the value of `by` into pieces (Arrow IPC bytes) and
    grouped by that value: a Spark shuffle over `partitions` partitions."""
    folder = not isinstance(source, list)

    def pieces(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for (index, seq), table in _inputs(batches, folder, columns):
            outs = _results(before(table)) if before is not None else [table]
            for piece, out in enumerate(outs):
                for n, (key, rows) in enumerate(_split(out, by)):
                    yield pa.RecordBatch.from_pydict(
                        {
                            "key": [key],
                            "index": [index],
                            "seq": [seq],
                            "piece": [piece * 1_000_000 + n],
                            "payload": [_to_bytes(rows)],
                        }
                    )

    frame = _source_frame(source, None).mapInArrow(pieces, PIECES)
    return frame.repartition(max(1, partitions), "key").groupBy("key")


def _split(table: pa.Table, by: str) -> Iterator[tuple[str, pa.Table]]:
    """(value, rows with that value) for each value of the column `by`, rows in their order."""
    if not table.num_rows:
        return
    table = sort_rows(table, by)  # a stable sort, as sort_indices; a file's texts may pass 2 GiB
    values = table[by].to_pylist()
    starts = [0] + [i for i in range(1, len(values)) if values[i] != values[i - 1]] + [len(values)]
    for start, end in zip(starts, starts[1:]):
        yield repr(values[start]), table.slice(start, end - start)


def _group_rows(group: pa.Table) -> pa.Table:
    """One group's pieces back as one table, in the source's order (item, batch, piece)."""
    group = sort_rows(group, [("index", "ascending"), ("seq", "ascending"), ("piece", "ascending")])  # > 2 GiB too
    return pa.concat_tables([_from_bytes(payload) for payload in group["payload"].to_pylist()])


def _to_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _from_bytes(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(data).read_all()


def _item_to_bytes(item: dict) -> bytes:
    """A work item or a task's result (a dict of numbers, text, bytes and such dicts) as a one-row Arrow table:
    data, never code, crosses between driver and executors (no pickle to load)."""
    return _to_bytes(pa.Table.from_pylist([item]))


def _item_from_bytes(data: bytes) -> dict:
    return _from_bytes(data).to_pylist()[0]
