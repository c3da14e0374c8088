"""Ray plumbing: starting or joining Ray, timing stages, and reading input files as a Ray Dataset."""
from __future__ import annotations

import logging
import os
import sys
import time
from collections import defaultdict

import pyarrow as pa
import ray
from ray.data.context import ShuffleStrategy
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from pipeline.config import RayConfig
from pipeline.storage import open_input
from stages.warc_read import read_warc


def start_ray(settings: RayConfig) -> None:
    """Join the cluster named by the config or RAY_ADDRESS, else start an embedded Ray sized for a small machine."""
    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    address = settings.address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        # Without this Ray may bind another interface's address instead of loopback.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        # An embedded Ray listens on loopback only and lives as long as this process: no token needed.
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        ray.init(
            num_cpus=settings.num_cpus,
            object_store_memory=settings.object_store_mb * 1024 * 1024,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.WARNING,
        )
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)  # "progress bars disabled"
    context = ray.data.DataContext.get_current()
    bars = settings.progress_bars
    context.enable_progress_bars = sys.stderr.isatty() if bars is None else bars
    context.print_on_execution_start = False
    # Sort-based shuffles with a stated number of partitions start in a fraction of a second on a small
    # machine, where the default hash shuffle spends seconds starting its aggregator actors.
    context.shuffle_strategy = ShuffleStrategy.SORT_SHUFFLE_PULL_BASED


@ray.remote(num_cpus=0)
class StageClock:
    """Sums the seconds each per-document stage spent, over every worker (CPU time of the stage's work),
    and per node, so that a cluster run shows where its work ran."""

    def __init__(self):
        self.seconds = defaultdict(float)
        self.node_seconds = defaultdict(float)

    def add(self, stage: str, seconds: float, node: str | None = None) -> None:
        self.seconds[stage] += seconds
        if node is not None:
            self.node_seconds[node] += seconds

    def report(self) -> dict[str, float]:
        return dict(self.seconds)

    def nodes(self) -> dict[str, float]:
        return dict(self.node_seconds)


def node_id() -> str:
    return ray.get_runtime_context().get_node_id()


def start_clock():
    """The run's StageClock, on the driver's own node: a clock on another node would take the run down with
    that node (its sums are read at the end), while the driver's node going away ends the run anyway."""
    here = NodeAffinitySchedulingStrategy(node_id(), soft=False)
    return StageClock.options(scheduling_strategy=here).remote()


class Timed:
    """Runs one stage on a batch, reports its time to the clock, and checks that no row went missing."""

    def __init__(self, stage, clock):
        self.stage = stage
        self.clock = clock

    def __call__(self, batch: pa.Table) -> pa.Table:
        start = time.perf_counter()
        out = self.stage(batch)
        if out.num_rows != batch.num_rows:
            raise RuntimeError(f"stage {self.stage.name} changed the row count {batch.num_rows} -> {out.num_rows}")
        self.clock.add.remote(self.stage.name, time.perf_counter() - start, node_id())
        return out


class ReadFiles:
    """Ray Data generator op: one input row (path, file_index, source) in, the file's record batches out."""

    name = "read"

    def __init__(self, batch_size: int, max_payload_bytes: int, clock, storage=None):
        self.batch_size = batch_size
        self.max_payload_bytes = max_payload_bytes
        self.clock = clock
        self.storage = storage  # the config's `storage` settings, for s3:// inputs

    def _open(self, path: str):
        return open_input(path, self.storage)

    def __call__(self, files: pa.Table):
        for path, file_index, source in zip(*(files[c].to_pylist() for c in ("path", "file_index", "source"))):
            start = time.perf_counter()
            for table in read_warc(path, file_index, source, self.batch_size, self.max_payload_bytes, self._open):
                self.clock.add.remote("read", time.perf_counter() - start, node_id())
                yield table
                start = time.perf_counter()


def task_options(settings) -> dict:
    """map_batches options from a pass's `resources` settings (pipeline.config.PassResources)."""
    # SPREAD: a pass's tasks go to every node with room, not first to the driver's node (Ray's default
    # packs onto the local node while it has room, which left a worker node idle in the two-node test).
    options = {"num_cpus": settings.num_cpus, "scheduling_strategy": "SPREAD"}
    if settings.memory_mb:
        options["memory"] = settings.memory_mb * 1024 * 1024
    if settings.concurrency:
        options["concurrency"] = settings.concurrency
    return options


def files_dataset(files: list[tuple[str, str]]) -> ray.data.Dataset:
    """One row per input file, in the fixed order that `order` numbers them by, one block each."""
    rows = [{"path": path, "file_index": i, "source": source} for i, (path, source) in enumerate(files)]
    return ray.data.from_items(rows, override_num_blocks=max(1, len(rows)))


def collect(ds: ray.data.Dataset, schema: pa.Schema) -> pa.Table:
    """A small dataset's rows on the driver as one Arrow table (empty with `schema` when there are none)."""
    tables = [t for t in ray.get(ds.to_arrow_refs()) if t.num_rows]
    return pa.concat_tables(tables).select(schema.names).cast(schema) if tables else schema.empty_table()
