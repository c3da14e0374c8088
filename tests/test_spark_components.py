"""pipeline/engines/spark_components.py on a real local Spark: the labels of large-star / small-star against a plain
union-find, on the shapes that take the most rounds (a long chain) or load one node (a star)."""

from __future__ import annotations

import logging
import random
import shutil
import sys

import pytest

if shutil.which("java") is None:
    pytest.skip("no java on PATH: Spark needs a Java runtime (17)", allow_module_level=True)
pytest.importorskip("pyspark", reason="pyspark is not installed: .venv/bin/python -m pip install pyspark")

from pyspark.sql import SparkSession  # noqa: E402

from pipeline.engines.spark_components import connected_components, connected_components_with_rounds  # noqa: E402

log = logging.getLogger(__name__)
EDGES = "a long, b long"


@pytest.fixture(scope="module")
def spark():
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SPARK_LOCAL_IP", "127.0.0.1")
        env.setenv("PYSPARK_PYTHON", sys.executable)
        env.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
        session = (
            SparkSession.builder.master("local[2]")
            .appName("test_spark_components")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "4")
            .getOrCreate()
        )
        session.sparkContext.setLogLevel("ERROR")
        yield session
        session.stop()


def union_find_labels(edges: list[tuple[int, int]]) -> dict[int, int]:
    """node -> smallest node of its component, by a plain union-find that always keeps the smaller root."""
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        parent.setdefault(a, a)
        parent.setdefault(b, b)
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {node: root(node) for node in parent}


def labels_of(spark, edges: list[tuple[int, int]], rounds_seen: list[int] | None = None) -> dict[int, int]:
    frame = spark.createDataFrame(edges, EDGES)
    labels, rounds = connected_components_with_rounds(frame)
    if rounds_seen is not None:
        rounds_seen.append(rounds)
    rows = labels.collect()
    assert len(rows) == len({row.node for row in rows}), "a node has more than one row"
    return {row.node: row.label for row in rows}


@pytest.mark.slow  # about 12 rounds of several Spark jobs each: 60-95 s here on 2 cores and a fresh JVM
def test_long_chain_is_one_component(spark):
    # 10,000 documents each a near duplicate of the next, ids permuted (the smallest id sits anywhere in the
    # chain) and edges in a shuffled order, some reversed: the most rounds a component of this size takes.
    rng = random.Random(14)
    ids = list(range(1_000_000, 1_010_000))
    rng.shuffle(ids)
    edges = [(ids[i], ids[i + 1]) if rng.random() < 0.5 else (ids[i + 1], ids[i]) for i in range(len(ids) - 1)]
    rng.shuffle(edges)
    rounds: list[int] = []
    labels = labels_of(spark, edges, rounds)
    assert labels == dict.fromkeys(ids, 1_000_000)
    assert ids.index(1_000_000) not in (0, len(ids) - 1)  # the label is not a chain end's
    log.warning("chain of %d nodes: %d rounds", len(ids), rounds[0])
    assert rounds[0] <= 30  # about log2(n) in practice (the paper's bound is O(log^2 n)), not n as label passing


def test_star_hub_not_smallest(spark):
    hub = 2_500
    leaves = [leaf for leaf in range(5_001) if leaf != hub]
    edges = [(hub, leaf) if leaf % 2 else (leaf, hub) for leaf in leaves]
    random.Random(7).shuffle(edges)
    rounds: list[int] = []
    labels = labels_of(spark, edges, rounds)
    assert labels == dict.fromkeys([hub, *leaves], 0)
    log.warning("star of %d leaves: %d rounds", len(leaves), rounds[0])
    assert rounds[0] == 2  # one round re-centres the star on node 0, the next changes nothing


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.slow
def test_random_graphs_match_union_find(spark, seed):
    # Many small components, ids spread out, plus duplicates, both directions and self loops (one node, 5,
    # has only a self loop: it is its own component).
    rng = random.Random(seed)
    nodes = rng.sample(range(10**12), 3_000)
    edges = [(rng.choice(nodes), rng.choice(nodes)) for _ in range(1_500)]
    edges += [(b, a) for a, b in rng.sample(edges, 300)] + rng.sample(edges, 300)
    edges += [(node, node) for node in rng.sample(nodes, 200)] + [(5, 5)]
    rng.shuffle(edges)
    expected = union_find_labels(edges)
    assert len(set(expected.values())) > 100  # many components, some of more than two nodes
    assert max(list(expected.values()).count(label) for label in set(expected.values())) > 5
    assert labels_of(spark, edges) == expected


def test_empty_edges_give_empty_labels(spark):
    labels = connected_components(spark.createDataFrame([], EDGES))
    assert labels.collect() == []
    assert [(f.name, f.dataType.typeName()) for f in labels.schema.fields] == [("node", "long"), ("label", "long")]


def test_too_few_rounds_is_one_clear_error(spark):
    frame = spark.createDataFrame([(i, i + 1) for i in range(100)], EDGES)
    with pytest.raises(RuntimeError, match=r"^connected components: no fixed point after 1 rounds") as error:
        connected_components(frame, max_rounds=1)
    assert "\n" not in str(error.value)


def test_reliable_checkpoints_when_a_directory_is_set(spark, tmp_path):
    # Last in the file: the checkpoint directory stays set on the session once set.
    spark.sparkContext.setCheckpointDir(str(tmp_path / "checkpoints"))
    edges = [(i, i + 1) for i in range(0, 200, 2)] + [(300, 250), (250, 400), (400, 300)]
    assert labels_of(spark, edges) == union_find_labels(edges)
    assert list((tmp_path / "checkpoints").rglob("part-*")), "no checkpoint files written"
