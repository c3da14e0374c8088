"""Connected components of a graph held in a Spark DataFrame, computed on the executors: the alternating
large-star / small-star algorithm of Kiveris, Lattanzi, Mirrokni, Rastogi and Vassilvitskii, "Connected
Components in MapReduce and Beyond" (SoCC 2014). Only Spark-engine code imports this module.

Edges are kept as a set of pairs (a, b) with a > b. For a node u, let m(u) be the smallest of u and its
neighbours; it is the smallest of u and the b of u's pairs (a = u), as a larger neighbour is never the smallest.
- large-star: each neighbour v > u of u is linked to m(u) instead of u;
- small-star: u and each neighbour v < u of u are linked to m(u) instead of to each other.
Invariant: neither changes the set of nodes or the connected components (an edge is only replaced by edges
within its component, and each node keeps a path to the node it left). The fixed point, where a round of
both changes no edge, is a star per component centred on its smallest id (the paper proves it is reached,
in O(log^2 n) rounds), so a node's label is the smallest of itself and its neighbours there: the same
labels whatever the input's order or partitioning.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def connected_components(edges: DataFrame, max_rounds: int = 100) -> DataFrame:
    """(node long, label long) for every node in `edges` (long columns a, b: undirected; duplicates, both
    directions and self loops allowed), label = the smallest node id of its component. `edges` is read once."""
    labels, _ = connected_components_with_rounds(edges, max_rounds)
    return labels


def connected_components_with_rounds(edges: DataFrame, max_rounds: int = 100) -> tuple[DataFrame, int]:
    """connected_components, and the number of large-star + small-star rounds it took (the last one the
    round that changed nothing)."""
    # Every pair once, larger id first; self loops kept here only so that their nodes get a label.
    pairs = _cut_lineage(edges.select(F.greatest("a", "b").alias("a"), F.least("a", "b").alias("b")).distinct())
    current = pairs.where(F.col("a") != F.col("b"))
    count = current.count()
    for round_number in range(1, max_rounds + 1):
        following = _cut_lineage(_small_star(_large_star(current)))
        following_count = following.count()  # reads the checkpoint: no recomputation
        # Exact test (a checksum could match by chance and stop early): both sides are sets.
        if following_count == count and following.exceptAll(current).isEmpty():
            return _labels(following, pairs), round_number
        current, count = following, following_count
    raise RuntimeError(f"connected components: no fixed point after {max_rounds} rounds ({count} edges left)")


def _smallest_below(edges: DataFrame) -> DataFrame:
    """(node, smallest): for each node with a smaller neighbour, its smallest neighbour, which is m(node)."""
    return edges.groupBy(F.col("a").alias("node")).agg(F.min("b").alias("smallest"))


def _large_star(edges: DataFrame) -> DataFrame:
    # An edge (v, u), v > u, becomes (v, m(u)); m(u) = u where u has no smaller neighbour.
    smallest = _smallest_below(edges)
    linked = edges.join(smallest, edges["b"] == smallest["node"], "left")
    # Duplicates are left for small-star's distinct (its min and join do not mind them): one shuffle less.
    return linked.select(edges["a"], F.coalesce(smallest["smallest"], edges["b"]).alias("b"))


def _small_star(edges: DataFrame) -> DataFrame:
    # The smaller neighbours b of u are its pairs (u, b): each becomes (b, m(u)) but m(u) itself, and u gets
    # (u, m(u)). A node with no smaller neighbour emits nothing; its larger neighbours keep its edges.
    smallest = _smallest_below(edges)
    linked = edges.join(smallest, edges["a"] == smallest["node"])
    neighbours = linked.where(edges["b"] != smallest["smallest"]).select(edges["b"].alias("a"), "smallest")
    centres = smallest.select(F.col("node").alias("a"), "smallest")
    return neighbours.union(centres).withColumnRenamed("smallest", "b").distinct()


def _labels(stars: DataFrame, pairs: DataFrame) -> DataFrame:
    """Each node's label at the fixed point: its only smaller neighbour (the centre), or itself."""
    nodes = pairs.select(F.col("a").alias("node")).union(pairs.select(F.col("b").alias("node"))).distinct()
    centres = stars.select(F.col("a").alias("node"), F.col("b").alias("centre"))
    return nodes.join(centres, "node", "left").select("node", F.coalesce("centre", "node").alias("label"))


def _cut_lineage(frame: DataFrame) -> DataFrame:
    """The frame computed now and stored, its plan cut: without this each round's plan holds every earlier
    round and the plan analysis alone grows with the rounds.

    A reliable checkpoint (files in the directory spark.sparkContext.setCheckpointDir names) when the caller
    has set one: on a standalone cluster that directory is on storage every executor reaches, and a lost
    executor's partitions are read back from it. Otherwise a local checkpoint (blocks in the executors'
    block managers, memory then disk): no directory to set or clean, right for local[N] where the executors
    are the driver's process, but a lost executor fails the job, as a cut lineage cannot recompute them.
    Spark removes a reliable checkpoint's files only with spark.cleaner.referenceTracking.cleanCheckpoints."""
    if frame.sparkSession.sparkContext.getCheckpointDir():
        return frame.checkpoint(eager=True)
    return frame.localCheckpoint(eager=True)
