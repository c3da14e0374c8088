"""The Ray engine (engine: ray): starting or joining Ray, running a pass's functions as Ray Data tasks, reading
the belt's Parquet back, and watching for lost nodes. The only module that knows Ray; pipeline/engines/engine.py
lists the functions every engine has."""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import threading
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import ray
from ray.data import ActorPoolStrategy, TaskPoolStrategy
from ray.data.context import ShuffleStrategy

try:  # Ray Data's hook into each execution's scheduling loop (DataProgress)
    from ray.data._internal.execution.execution_callback import ExecutionCallback as _ExecutionCallback
except ImportError:
    _ExecutionCallback = object  # type: ignore[misc,assignment]  # mypy cannot type a fallback base class

from pipeline import progress
from pipeline.config import Config, ConfigError, RayConfig, ResourcesConfig, SparkConfig
from pipeline.engines.engine import error_chain, start_failed
from stages.dedup import resolve_roots, union_edges

log = logging.getLogger("crawlbelt")


def start(config: Config) -> None:
    """Start or join Ray, then check that some node can run each pass's tasks."""
    if config.spark != SparkConfig():  # a config written for both engines is fine; say what this one does not use
        log.warning("spark: Spark settings, not used by engine: ray")
    start_ray(config.ray)
    check_resources(config.resources, config.ray, pools(config))


def pools(config: Config) -> dict[str, Any]:
    """The actor pools a run's steps ask for (its transformers scorers), by their `stages` key."""
    from pipeline import spec

    return {
        f"stages[{i}]": spec.transformers_settings(stage.entry)
        for i, stage in enumerate(spec.declared(config))
        if spec.on_actors(stage)
    }


def stop() -> None:
    ray.shutdown()


def watch(config: Config) -> NodeWatch:
    return NodeWatch(config.ray.node_lost_timeout_s)


def start_ray(settings: RayConfig) -> None:
    """Join the cluster named by the config or RAY_ADDRESS, else start an embedded Ray sized for a small machine
    (check_resources then logs which)."""
    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    address = settings.address or os.environ.get("RAY_ADDRESS")
    if address:
        # The job's working directory stays the driver's: its tasks run the crawlbelt installed on their node.
        # Ray unpacks a working directory afresh for each node's first task, removing the copy at that path,
        # which nodes on one machine share: the driver's own (docs/design.md, "A submitted job's working
        # directory"). The override lets this driver's runtime_env replace the submitted job's.
        os.environ["RAY_OVERRIDE_JOB_RUNTIME_ENV"] = "1"
        check_answers(address, "ray.address" if settings.address else "RAY_ADDRESS")
        try:
            ray.init(address=address, runtime_env={"working_dir": None}, log_to_driver=False)
        except (ConnectionError, TimeoutError) as error:  # the cluster went away between the check and the join
            raise start_failed("Ray", error) from None
    else:
        # Without this Ray may bind another interface's address instead of loopback.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        # An embedded Ray listens on loopback only and lives as long as this process: no token needed.
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        # "local": a new Ray of this process's own; without an address ray.init() joins the machine's latest
        # `ray start` cluster, even one killed since, whose address file it left behind.
        try:
            ray.init(
                address="local",
                num_cpus=settings.num_cpus,
                object_store_memory=settings.object_store_mb * 1024 * 1024,
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.WARNING,
            )
        except Exception as error:  # Ray raises plain Exception ("timed out during startup") on a loaded machine
            raise start_failed("Ray", error) from None
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)  # "progress bars disabled"
    logging.getLogger("ray.data.dataset").addFilter(_no_transient_cpu_warning)
    # A failed execution's error reaches the belt, which says it in one line (or, if unforeseen, with its
    # traceback, also in run.log): Ray Data's own logging of it would print the traceback first.
    for name in ("ray.data.exceptions", "ray.data._internal.execution.streaming_executor_state"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    context = ray.data.DataContext.get_current()
    bars = settings.progress_bars
    context.enable_progress_bars = sys.stderr.isatty() if bars is None else bars
    context.print_on_execution_start = False
    # Sort-based shuffles with a stated number of partitions start in a fraction of a second on a small
    # machine, where the default hash shuffle spends seconds starting its aggregator actors.
    context.shuffle_strategy = ShuffleStrategy.SORT_SHUFFLE_PULL_BASED
    # Every Ray Data execution tells NodeWatch when it makes progress.
    if _ExecutionCallback is not object and DataProgress not in context.custom_execution_callback_classes:
        context.custom_execution_callback_classes.append(DataProgress)


def check_answers(address: str, key: str, timeout_s: float = 5.0) -> None:
    """ConfigError unless something listens at a HOST:PORT address: ray.init would try to reach it for ever.
    (`auto` and `ray://` addresses are Ray's to resolve.)"""
    if address == "auto" or "://" in address:
        return
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"{key} {address!r}: expected HOST:PORT (the head's, e.g. 10.0.0.1:6379), auto or ray://...")
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as error:
        raise ConfigError(
            f"{key} {address!r}: no Ray cluster answers there ({error.strerror or error}); give the head's "
            "address (HOST:6379), or leave it out for a Ray of this run's own"
        ) from None


def _no_transient_cpu_warning(record: logging.LogRecord) -> bool:
    """Ray Data warns that the cluster has no available CPU when a pass starts a moment before the previous
    pass's tasks have given theirs back; check_resources already makes sure every pass's tasks fit a node."""
    return not record.getMessage().startswith("Warning: The Ray cluster currently does not have any available CPUs")


def check_resources(
    resources: ResourcesConfig, settings: RayConfig, pools: dict[str, Any] | None = None, poll_s: float = 2.0
) -> None:
    """Before any work: some node of the cluster can run a task of each pass (resources.filter, .encode) and
    an actor of each pool (a transformers scorer's num_cpus and num_gpus);
    else Ray would wait for ever. A joined cluster (which an autoscaler may grow) gets `resource_wait_s`
    to have such a node; then, as at once on an embedded Ray, ConfigError names the key and the nodes.
    Once they fit, it logs which Ray the run uses (after the checks: a config error stays one line)."""
    address = settings.address or os.environ.get("RAY_ADDRESS")
    joined = bool(address)
    deadline = time.monotonic() + (settings.resource_wait_s if joined else 0.0)
    said = False
    while True:
        nodes = [node["Resources"] for node in ray.nodes() if node["Alive"]]
        requests = {f"resources.{name}": getattr(resources, name) for name in ("filter", "encode")} | (pools or {})
        unmet = [key for key, request in requests.items() if not any(_fits(request, node) for node in nodes)]
        if not unmet:
            log.info("ray: %s", _ray_in_use(address, nodes))
            return
        key, asked = _unmet_request(unmet[0], requests[unmet[0]], nodes)
        if time.monotonic() >= deadline:
            waited = f" after waiting {settings.resource_wait_s:g} s (ray.resource_wait_s)" if joined else ""
            raise ConfigError(
                f"{key}: a task asks for {asked}, which no node of the cluster has{waited} "
                f"(cluster: {_describe_nodes(nodes)})"
            )
        if not said:
            log.warning(
                "%s: waiting up to %g s (ray.resource_wait_s) for a node with %s (cluster: %s)",
                key,
                settings.resource_wait_s,
                asked,
                _describe_nodes(nodes),
            )
            said = True
        time.sleep(poll_s)


def _fits(settings, node: dict) -> bool:
    memory = (getattr(settings, "memory_mb", None) or 0) * 1024 * 1024
    gpus = getattr(settings, "num_gpus", 0)
    return node.get("CPU", 0) >= settings.num_cpus and node.get("memory", 0) >= memory and node.get("GPU", 0) >= gpus


def _unmet_request(key: str, settings, nodes: list[dict]) -> tuple[str, str]:
    """The key of a request no node fits, and the request in words."""
    gpus = getattr(settings, "num_gpus", 0)
    if gpus and not any(node.get("GPU", 0) >= gpus for node in nodes):
        return f"{key}.num_gpus", f"{gpus:g} GPU{'s' * (gpus != 1)}"
    if gpus and not any(_fits(settings, node) for node in nodes):
        return key, f"{settings.num_cpus:g} CPUs and {gpus:g} GPUs on one node"
    cpus = f"{settings.num_cpus:g} CPUs"
    if not any(node.get("CPU", 0) >= settings.num_cpus for node in nodes) or not settings.memory_mb:
        return f"{key}.num_cpus", cpus
    memory = f"{settings.memory_mb} MB of memory"
    if not any(node.get("memory", 0) >= settings.memory_mb * 1024 * 1024 for node in nodes):
        return f"{key}.memory_mb", memory
    return key, f"{cpus} and {memory} on one node"


def _ray_in_use(address: str | None, nodes: list[dict]) -> str:
    cpus = sum(node.get("CPU", 0) for node in nodes)
    if address:
        return f"joined the cluster at {address}, {len(nodes)} nodes, {cpus:g} CPUs"
    return f"embedded on this machine, {cpus:g} CPUs"


def _describe_nodes(nodes: list[dict]) -> str:
    shapes = Counter((node.get("CPU", 0), int(node.get("memory", 0) // 2**20)) for node in nodes)
    return (
        ", ".join(
            f"{count} node{'s' * (count > 1)} of {cpus:g} CPUs and {memory:,} MB of memory"
            for (cpus, memory), count in sorted(shapes.items())
        )
        or "no node"
    )


def nodes_alive() -> int:
    return sum(node["Alive"] for node in ray.nodes())


def worker_died(error: BaseException) -> bool:
    """Whether a task failed because its worker (or actor) process died, or Ray's memory monitor killed it (Ray
    gave up rerunning it)."""
    died = (ray.exceptions.WorkerCrashedError, ray.exceptions.OutOfMemoryError, ray.exceptions.ActorDiedError)
    return any(isinstance(e, died) or any(kind.__name__ in str(e) for kind in died) for e in error_chain(error))


def failed_item(error: BaseException) -> int | None:
    """None: Ray's error does not say; the other tasks' workers live on, so the driver finds the dead one."""
    return None


def node_id() -> str:
    return ray.get_runtime_context().get_node_id()


def task_options(settings) -> dict:
    """map_batches options from a pass's `resources` settings (pipeline.config.PassResources), as Ray Data's
    named parameters (its `**ray_remote_args` are deprecated and go in Ray 2.64)."""
    # Ray Data spreads tasks whose input is small (here file paths) over every node with room (its SPREAD
    # default), and reruns a task whose worker or node died, or whose lost output is needed again.
    options = {"num_cpus": settings.num_cpus, "compute": TaskPoolStrategy(settings.concurrency)}
    if settings.memory_mb:
        options["memory"] = settings.memory_mb * 1024 * 1024
    return options


def write_options(settings) -> dict:
    """write_parquet options for the write after a pass's map_batches: the same CPUs, memory and most tasks
    at once, so that Ray Data fuses the write into the pass's tasks (it fuses only operators whose remote
    args and task pool sizes match). Ray 2.60's write_parquet takes them as `ray_remote_args`, which it
    does not deprecate."""
    options = task_options(settings)
    return {
        "ray_remote_args": {key: options[key] for key in ("num_cpus", "memory") if key in options},
        "concurrency": settings.concurrency,
    }


def parquet_dataset(folder: Path, columns: list[str] | None = None) -> ray.data.Dataset:
    """The Parquet files of a folder that the driver and the workers see, read by plain tasks, one per file,
    a row group at a time. Ray Data's read_parquet spends about 2 s per call here sampling the files with
    helper actors (which are also not rerun when their node is lost): more than a small run's whole pass."""
    paths = sorted(str(p) for p in Path(folder).glob("*.parquet"))
    return ray.data.from_items([{"path": p} for p in paths], override_num_blocks=max(1, len(paths))).map_batches(
        _read_parquet_files, batch_size=1, batch_format="pyarrow", fn_kwargs={"columns": columns}
    )


def _read_parquet_files(files: pa.Table, columns: list[str] | None = None) -> Iterator[pa.Table]:
    for path in files["path"].to_pylist():
        for batch in pq.ParquetFile(path).iter_batches(batch_size=4096, columns=columns):
            yield pa.Table.from_batches([batch])


# The primitives of pipeline/engines/engine.py (which says what each does) as Ray Data operations.
Source = Path | list[dict]


class _PerItem:
    """map_batches op of map_items: one item (a one-row table) in, the function's result out as JSON."""

    def __init__(self, function: Callable[[dict], dict]):
        self.function = function

    def __call__(self, items: pa.Table) -> pa.Table:
        return pa.table(
            {"result": [json.dumps({**self.function(item), "node": node_id()}) for item in items.to_pylist()]}
        )


# Tries of a map_items task whose worker process died (Ray Data's default is for ever): enough for a lost
# node or two; a task that kills its worker this many times in a row does so on its input (filtering.crashed_in).
ITEM_TASK_RETRIES = 3


def map_items(function: Callable[[dict], dict], items: list[dict], resources, pool: bool = False) -> list[dict]:
    """`function(item)` for every item, one Ray task per item (as `resources` asks), each result with the
    `node` that ran it. The function gets and returns plain JSON-able dicts; it is pickled to the workers.
    `pool`: the items go to a pool of `resources.concurrency` actors instead, each asking for `num_cpus` and
    `num_gpus` and keeping what the function loads (a model) from one item to the next."""
    dataset = ray.data.from_items(items, override_num_blocks=max(1, len(items)))
    with warnings.catch_warnings():  # max_retries has no named parameter yet (Ray 2.60); remote args it is
        warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")
        if pool:
            results = dataset.map_batches(
                _PerItem,
                fn_constructor_args=(function,),
                batch_size=1,
                batch_format="pyarrow",
                compute=ActorPoolStrategy(size=resources.concurrency),
                num_cpus=resources.num_cpus,
                num_gpus=resources.num_gpus,
                # Ray Data restarts a dead actor and retries its task for ever by default: an item that kills
                # its actor every time would hold the run for ever.
                max_restarts=ITEM_TASK_RETRIES,
                max_task_retries=ITEM_TASK_RETRIES,
            )
        else:
            results = dataset.map_batches(
                _PerItem(function),
                batch_size=1,
                batch_format="pyarrow",
                max_retries=ITEM_TASK_RETRIES,
                **task_options(resources),
            )
    return [json.loads(text) for table in ray.get(results.to_arrow_refs()) for text in table["result"].to_pylist()]


def map_to_parquet(
    source: Source,
    fn: Callable,
    out: Path,
    *,
    columns: list[str] | None = None,
    tasks: int | None = None,
    resources=None,
) -> None:
    """Every batch of `source` through `fn` (a table in, a table or a generator of tables out), the results
    written as Parquet files in the folder `out`. With a pass's `resources` settings, the write runs in the
    same tasks as `fn` (write_options)."""
    rows = _map(_rows(source, columns, tasks), fn, source, resources)
    rows.write_parquet(str(out), **(write_options(resources) if resources else {}))


def map_to_driver(source: Source, fn: Callable, *, columns: list[str] | None = None) -> Iterable[pa.Table]:
    """Every batch of `source` through `fn` on the workers; the results streamed to the driver, a batch at a
    time, so that it never holds them all."""
    return _map(_rows(source, columns, None), fn, source).iter_batches(batch_format="pyarrow")


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
    into `partitions` partitions; `fn` maps all rows of one value of `by` to a table. Their results, as one
    table on the driver (empty with `schema` when there are none)."""
    return _collect(_grouped(source, by, partitions, fn, before, columns), schema)


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
    """As group_to_table, the results written as Parquet files in the folder `out` instead."""
    _grouped(source, by, partitions, fn, before, columns).write_parquet(str(out))


def connected_components(edges: Path, nodes: np.ndarray) -> pa.Table:
    """(node, label) for every node of the graph whose (order, linked_to) edges are the Parquet files in
    `edges` that is not the smallest node of its component, with that smallest node as its label. `nodes`:
    the sorted ids of every node the edges may name.

    A union-find on the driver over dense ids, fed a chunk of edges at a time: 8 bytes per node and one chunk
    of edges in memory, and faster than rounds of shuffles at the sizes one driver holds (docs/benchmarks.md)."""
    parent = np.arange(len(nodes), dtype=np.int64)
    for chunk in ds.dataset(edges, format="parquet").to_batches(batch_size=1 << 18):
        a = np.searchsorted(nodes, chunk["order"].to_numpy())
        b = np.searchsorted(nodes, chunk["linked_to"].to_numpy())
        union_edges(parent, a, b)
    resolve_roots(parent)
    members = np.flatnonzero(parent != np.arange(len(nodes)))
    return pa.table(
        {"node": pa.array(nodes[members], pa.int64()), "label": pa.array(nodes[parent[members]], pa.int64())}
    )


class Shared:
    """A value sent once to every worker (`value` reads it there) instead of with every task."""

    def __init__(self, value):
        self.ref = ray.put(value)

    @property
    def value(self):
        return ray.get(self.ref)


def cpu_count() -> int:
    """The CPUs of the whole cluster."""
    return int(ray.cluster_resources().get("CPU", 1))


def _rows(source: Source, columns: list[str] | None, tasks: int | None) -> ray.data.Dataset:
    if isinstance(source, list):
        return ray.data.from_items(source, override_num_blocks=tasks or max(1, len(source)))
    return parquet_dataset(source, columns)


def _map(rows: ray.data.Dataset, fn: Callable, source: Source, resources=None) -> ray.data.Dataset:
    # A list's tasks each get their items in one call; a folder's rows come a block at a time.
    batching: dict[str, Any] = {"batch_size": None} if isinstance(source, list) else {}
    return rows.map_batches(fn, batch_format="pyarrow", **batching, **(task_options(resources) if resources else {}))


def _grouped(
    source: Source, by: str, partitions: int, fn: Callable, before: Callable | None, columns: list[str] | None
) -> ray.data.Dataset:
    rows = _rows(source, columns, None)
    if before is not None:
        rows = _map(rows, before, source)
    return rows.groupby(by, num_partitions=partitions).map_groups(fn, batch_format="pyarrow")


def _collect(ds: ray.data.Dataset, schema: pa.Schema) -> pa.Table:
    """A small dataset's rows on the driver as one Arrow table (empty with `schema` when there are none)."""
    tables = [t for t in ray.get(ds.to_arrow_refs()) if t.num_rows]
    return pa.concat_tables(tables).select(schema.names).cast(schema) if tables else schema.empty_table()


class NodeWatch:
    """Watches the cluster's nodes while a run goes on. When a node that was alive goes away, it logs one
    line naming it; Ray then reruns the tasks that node was running, and the ones whose outputs were kept
    only there, on the nodes left. If after a loss the run goes `stall_s` seconds without progress (no Ray
    Data task finished or output taken, no step of the belt ended), it calls `on_stall` with one line
    naming the lost nodes: by default that line goes to stderr and the process exits with status 1, so
    that a run which cannot go on fails in bounded time instead of waiting for resources for ever.

    `nodes` and `clock` are there for tests: `check()` is what the thread runs every `poll_s` seconds."""

    def __init__(
        self,
        stall_s: float | None,
        poll_s: float = 2.0,
        nodes: Callable[[], list[dict]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_stall: Callable[[str], None] | None = None,
    ):
        self.stall_s, self.poll_s = stall_s, poll_s
        self.nodes = nodes or ray.nodes
        self.clock = clock
        self.on_stall = on_stall or exit_run
        self.alive: dict[str, str] = {}  # node id -> address, every node seen alive
        self.lost: dict[str, tuple[str, float, str]] = {}  # node id -> (address, when noticed, wall time)
        self.last_progress = clock()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def progress(self) -> None:
        self.last_progress = self.clock()

    def check(self) -> None:
        with self._lock:  # the watch thread and the main thread (settle) both check
            self._check()

    def _check(self) -> None:
        now = self.clock()
        for node in self.nodes():
            node_id, address = node["NodeID"], node.get("NodeManagerAddress", "?")
            if node.get("Alive"):
                self.alive[node_id] = address
            elif node_id in self.alive and node_id not in self.lost:
                self.lost[node_id] = (address, now, time.strftime("%H:%M:%S"))
                why = node.get("DeathReasonMessage")
                log.warning(
                    "node %s (%s) was lost%s: Ray reruns its tasks on the nodes left%s",
                    node_id,
                    address,
                    f" ({why})" if why else "",
                    "" if self.stall_s is None else f"; the run fails if it makes no progress for {self.stall_s:g} s",
                )
        if self.lost and self.stall_s is not None:
            since = max(self.last_progress, max(noticed for _, noticed, _ in self.lost.values()))
            if now - since >= self.stall_s:
                self.on_stall(self.stall_message(now - since))

    def settle(self, error: BaseException, wait_s: float = 30.0) -> None:
        """After `error` ended a run: look at the nodes again, and if the error looks like a node's death
        that Ray has not yet marked (it takes some missed health checks), wait up to `wait_s` for it."""
        self.check()
        if self.lost or len(self.alive) < 2 or not _looks_like_node_death(error):
            return
        deadline = self.clock() + wait_s
        while not self.lost and self.clock() < deadline:
            time.sleep(min(self.poll_s, 1.0))
            self.check()

    def stall_message(self, seconds: float) -> str:
        nodes = ", ".join(f"{node_id} ({address}, lost at {wall})" for node_id, (address, _, wall) in self.lost.items())
        return (
            f"lost node {nodes}: the run made no progress for {seconds:.0f} s after it "
            f"(ray.node_lost_timeout_s); rerun it (the filter pass's finished files are kept)"
        )

    def lost_line(self) -> str | None:
        """One line naming the nodes lost so far, or None."""
        if not self.lost:
            return None
        return "lost node " + ", ".join(f"{node_id} ({address})" for node_id, (address, _, _) in self.lost.items())

    def __enter__(self) -> NodeWatch:
        self.check()
        _WATCHES.add(self)
        self._thread = threading.Thread(target=self._run, name="crawlbelt-node-watch", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        _WATCHES.discard(self)
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(self.poll_s):
            try:
                self.check()
            except Exception as error:  # noqa: BLE001 (a GCS hiccup must not end the watch)
                log.debug("node watch: %s", error)


_NODE_DEATH_ERRORS = tuple(
    getattr(ray.exceptions, name)
    for name in (
        "ActorDiedError",
        "ActorUnavailableError",
        "NodeDiedError",
        "ObjectLostError",
        "OwnerDiedError",
        "WorkerCrashedError",
        "ObjectReconstructionFailedError",
    )
    if hasattr(ray.exceptions, name)
)


def _looks_like_node_death(error: BaseException | None) -> bool:
    """Whether an error, or one it was raised from, is one that Ray raises when a node goes away (Ray Data
    sometimes passes such errors on only as text)."""
    return any(
        isinstance(e, _NODE_DEATH_ERRORS) or "node has died" in str(e) or "node it was running on is dead" in str(e)
        for e in error_chain(error)
    )


def exit_run(message: str) -> None:
    """End the whole process from the watch thread: the main thread is blocked inside Ray."""
    print(f"crawlbelt: error: {message}", file=sys.stderr, flush=True)
    os._exit(1)


_WATCHES: set[NodeWatch] = set()


class DataProgress(_ExecutionCallback):
    """A Ray Data execution callback (DataContext.custom_execution_callback_classes) that tells the running
    NodeWatches whenever an operator finished a task or had an output taken since its last scheduling step,
    and the run's progress (pipeline/progress.py) how many tasks of the execution's first operator, the one
    that reads its input's blocks (an item or a file each), have finished. It reads the executor's operator
    metrics, which are Ray Data internals: without them it tells nothing within an execution, and the
    NodeWatch counts only the start and end of each."""

    def __init__(self):
        self.seen = None

    @staticmethod
    def _tell():
        for watch in list(_WATCHES):
            watch.progress()

    def before_execution_starts(self, executor):
        self._tell()
        progress.step_started()

    def on_execution_step(self, executor):
        try:
            ops = list(executor._topology)
            now = tuple((op.metrics.num_tasks_finished, op.metrics.num_outputs_taken) for op in ops)
            reading = (ops[1].metrics.num_tasks_finished, ops[0].num_outputs_total()) if len(ops) > 1 else None
        except (AttributeError, TypeError, IndexError):
            return
        if now != self.seen:
            self.seen = now
            self._tell()
            if reading is not None and reading[1]:
                progress.tasks(*reading)

    def after_execution_succeeds(self, executor):
        self._tell()
