"""The engine seam: the passes know only pipeline.engines.engine's data-parallel primitives, which run plain Arrow
functions the same way on a real embedded Ray and a real embedded Spark; whole files are written by
storage.write_atomic and parts named by storage.part_name."""

import ast
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from helpers import needs_spark
from pipeline.engines import engine
from pipeline.config import Config, PassResources, RayConfig, SparkConfig
from pipeline.storage import part_index, part_name, write_atomic

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", params=["ray", pytest.param("spark", marks=needs_spark)])
def started(request):
    """Each engine embedded in this process in turn, as a run without a cluster starts it."""
    engine.start(Config(engine=request.param, ray=RayConfig(num_cpus=2), spark=SparkConfig(master="local[2]")))
    # The workers cannot import this test module: its functions travel by value.
    if request.param == "ray":
        import ray

        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    else:
        from pyspark import cloudpickle

        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield request.param
    engine.stop()
    engine.use("ray")


@pytest.mark.parametrize("module", ["belt.py", *sorted(p.name for p in (ROOT / "pipeline" / "passes").glob("*.py"))])
def test_a_pass_does_not_know_the_engine(module):
    tree = ast.parse(next((ROOT / "pipeline").glob(f"**/{module}")).read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert not {name for name in imported if name.split(".")[0] in ("ray", "pyspark")}
    assert not {name for name in imported if name.startswith("pipeline.engines.engine_")}


def _numbers(folder: Path, files: int, rows: int) -> Path:
    """`files` Parquet files of `rows` rows each: n (0, 1, ...) and its remainder mod 3."""
    folder.mkdir()
    for i in range(files):
        n = pa.array(range(i * rows, (i + 1) * rows), pa.int64())
        pq.write_table(pa.table({"n": n, "mod": pc.remainder(n, 3), "unused": n}), folder / part_name(i))
    return folder


def _sum_by_mod(group: pa.Table) -> pa.Table:
    return pa.table({"mod": [group["mod"][0].as_py()], "total": [pc.sum(group["n"]).as_py()], "rows": [group.num_rows]})


def _squares(batch: pa.Table) -> pa.Table:
    return pa.table({"n": batch["n"], "square": pc.multiply(batch["n"], batch["n"])})


SUMS = pa.schema([("mod", pa.int64()), ("total", pa.int64()), ("rows", pa.int64())])


def test_the_primitives(started, tmp_path):
    numbers = _numbers(tmp_path / "numbers", files=3, rows=10)  # n = 0..29

    # A folder's batches to a new folder, only the columns asked for read.
    engine.map_to_parquet(numbers, _squares, tmp_path / "squares", columns=["n"])
    squares = pq.read_table(tmp_path / "squares").sort_by("n")
    assert squares["square"].to_pylist() == [n * n for n in range(30)]

    # Streamed to the driver: every row once.
    streamed = sorted(
        n for batch in engine.map_to_driver(numbers, _squares, columns=["n"]) for n in batch["n"].to_pylist()
    )
    assert streamed == list(range(30))

    # Grouped by a key column: each group whole in one call, collected; an empty result has the schema.
    sums = engine.group_to_table(numbers, "mod", 2, _sum_by_mod, SUMS, columns=["n", "mod"]).sort_by("mod")
    assert sums.to_pylist() == [{"mod": m, "total": sum(range(m, 30, 3)), "rows": 10} for m in range(3)]
    assert (
        engine.group_to_table(numbers, "mod", 2, lambda g: g.slice(0, 0), SUMS, columns=["n", "mod"])
        == SUMS.empty_table()
    )

    # Items in tasks: each task's items in one call; `before` adds the key; results written as Parquet.
    def task_of(items: pa.Table) -> pa.Table:
        return pa.table({"first": [items["i"][0].as_py()], "items": [items.num_rows]})

    items = [{"i": i} for i in range(6)]
    engine.map_to_parquet(items, task_of, tmp_path / "tasks", tasks=3, resources=PassResources(num_cpus=1))
    assert sorted(pq.read_table(tmp_path / "tasks").to_pylist(), key=lambda r: r["first"]) == [
        {"first": 0, "items": 2},
        {"first": 2, "items": 2},
        {"first": 4, "items": 2},
    ]

    shared = engine.Shared({i: i * 10 for i in range(6)})

    def with_key(items: pa.Table) -> pa.Table:
        return pa.table({"n": [shared.value[i] for i in items["i"].to_pylist()], "mod": pc.remainder(items["i"], 3)})

    engine.group_to_parquet(items, "mod", 3, _sum_by_mod, tmp_path / "grouped", before=with_key)
    grouped = pq.read_table(tmp_path / "grouped").sort_by("mod").to_pylist()
    assert grouped == [{"mod": m, "total": 10 * (m + m + 3), "rows": 2} for m in range(3)]
    assert engine.cpu_count() == 2

    # Connected components: every node not the smallest of its component, labelled with the smallest.
    (tmp_path / "edges").mkdir()
    edges = {"order": [5, 7, 9, 30, 31], "linked_to": [7, 3, 9, 31, 40]}  # {3, 5, 7}, {9}, {30, 31, 40}
    pq.write_table(
        pa.table(edges, pa.schema([("order", pa.int64()), ("linked_to", pa.int64())])), tmp_path / "edges" / "e.parquet"
    )
    labels = engine.connected_components(tmp_path / "edges", np.array([3, 5, 7, 9, 30, 31, 40]))
    assert labels.to_pylist() == [
        {"node": 5, "label": 3},
        {"node": 7, "label": 3},
        {"node": 31, "label": 30},
        {"node": 40, "label": 30},
    ]


@pytest.mark.parametrize(
    "content, expected",
    [
        (b"\x00bytes", b"\x00bytes"),
        ("text é\n", "text é\n".encode()),
        (lambda tmp: tmp.write_bytes(b"by a writer"), b"by a writer"),
        (lambda tmp: pq.write_table(pa.table({"a": [1]}), tmp), None),
    ],
)
def test_write_atomic(tmp_path, content, expected):
    target = tmp_path / "out.bin"
    target.write_bytes(b"earlier")
    write_atomic(target, content)
    if expected is None:
        assert pq.read_table(target)["a"].to_pylist() == [1]
    else:
        assert target.read_bytes() == expected
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_write_atomic_leaves_the_earlier_file_when_the_write_fails(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"earlier")

    def fails_half_way(tmp: Path) -> None:
        tmp.write_bytes(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        write_atomic(target, fails_half_way)
    assert target.read_bytes() == b"earlier" and [p.name for p in tmp_path.iterdir()] == ["out.bin"]


@pytest.mark.parametrize(
    "index, args, name",
    [
        (0, (), "part-00000.parquet"),
        (123, (), "part-00123.parquet"),
        (7, ("file", 6), "file-000007.parquet"),
        (123456, (), "part-123456.parquet"),
    ],
)
def test_part_names(index, args, name):
    assert part_name(index, *args) == name
    assert part_index(name) == index
    assert part_index(f"tokens/{name}") == index
