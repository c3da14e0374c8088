"""Stand-in for the `graphframes` package, installed as `graphframes` in the text-dedup benchmark's venv
(benchmarks/bench_spark.py): text-dedup 0.4.0's minhash_spark.py calls `GraphFrame(vertices, edges)
.connectedComponents()`, whose work GraphFrames does in a JVM jar served only from Maven repositories, which
this machine cannot reach (PyPI's graphframes packages carry the Python side alone).

It does what GraphFrames' default connected components does: the alternating large-star / small-star
algorithm (Kiveris et al., "Connected Components in MapReduce and Beyond", 2014), in DataFrame operations,
so it runs in the JVM as GraphFrames' does, with the edge set checkpointed each round. The result is the
vertices with a `component` column holding the smallest vertex id of the component, as GraphFrames gives it
and text-dedup relies on (it keeps the document whose id equals its component).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


class GraphFrame:
    def __init__(self, vertices: DataFrame, edges: DataFrame):
        self.vertices, self.edges = vertices, edges

    def connectedComponents(self, **_ignored) -> DataFrame:  # noqa: N802 (GraphFrames' name)
        # every edge as (src, dst) with src > dst, once; the algorithm keeps that orientation throughout
        edges = (
            self.edges.select(F.greatest("src", "dst").alias("src"), F.least("src", "dst").alias("dst"))
            .where("src != dst")
            .distinct()
            .checkpoint()
        )
        while not _stars(edges):
            edges = _small_star(_large_star(edges)).checkpoint()
        parent = edges.select(F.col("src").alias("id"), F.col("dst").alias("component"))
        return self.vertices.join(parent, "id", "left").withColumn("component", F.coalesce("component", "id"))


def _large_star(edges: DataFrame) -> DataFrame:
    """Each node's larger neighbours attach to the smallest node of its closed neighbourhood."""
    both = edges.union(edges.select(F.col("dst").alias("src"), F.col("src").alias("dst")))
    smallest = both.groupBy("src").agg(F.least(F.min("dst"), F.col("src")).alias("smallest"))
    larger = both.where("dst > src").join(smallest, "src")
    return larger.select(F.col("dst").alias("src"), F.col("smallest").alias("dst")).distinct()


def _small_star(edges: DataFrame) -> DataFrame:
    """Each node and its smaller neighbours attach to the smallest of them."""
    smallest = edges.groupBy("src").agg(F.min("dst").alias("smallest"))
    neighbours = edges.join(smallest, "src").select(F.col("dst").alias("src"), F.col("smallest").alias("dst"))
    return neighbours.where("src != dst").union(smallest.select("src", F.col("smallest").alias("dst"))).distinct()


def _stars(edges: DataFrame) -> bool:
    """Done when every node has one parent and every parent is a root (has none): each component is then a
    star around its smallest node, since every edge points to a smaller id."""
    counts = edges.agg(F.count("*").alias("edges"), F.countDistinct("src").alias("children")).collect()[0]
    if counts["edges"] != counts["children"]:
        return False
    parents_with_parents = edges.select(F.col("dst").alias("src")).distinct().join(edges, "src", "left_semi")
    return parents_with_parents.isEmpty()
