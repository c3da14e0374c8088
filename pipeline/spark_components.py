"""TEMPORARY stand-in until the helper's version lands."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def connected_components(edges: DataFrame, max_rounds: int = 100) -> DataFrame:
    e = edges.select(F.least("a", "b").alias("a"), F.greatest("a", "b").alias("b")).where("a != b").distinct()
    nodes = edges.select(F.col("a").alias("node")).union(edges.select(F.col("b").alias("node"))).distinct()
    labels = nodes.withColumn("label", F.col("node"))
    for _ in range(max_rounds):
        both = e.union(e.select(F.col("b").alias("a"), F.col("a").alias("b")))
        j = both.join(labels.withColumnRenamed("node", "b"), "b").groupBy("a").agg(F.min("label").alias("m"))
        new = (
            labels.join(j.withColumnRenamed("a", "node"), "node", "left")
            .select("node", F.least("label", F.coalesce("m", "label")).alias("label"))
            .localCheckpoint()
        )
        changed = new.join(labels.withColumnRenamed("label", "old"), "node").where("label != old").count()
        labels = new
        if not changed:
            return labels
    raise RuntimeError("no convergence")
