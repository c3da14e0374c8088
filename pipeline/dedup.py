"""Exact and near dedup as Ray Data operations over the documents that survived the filters.

Both partition by hash: every row of one hash group (exact) or one LSH bucket (near) lands in the same
shard, shards are spread over workers, and survivors are chosen by the fixed `order`, so the verdicts
are the same whatever the number of workers, shards or blocks.
"""
from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import ray

from pipeline.config import DedupConfig
from pipeline.engine import collect
from stages.dedup import (MinHasher, band_hashes, bucket_edges, components, exact_duplicates, optimal_bands,
                          sha1_key, shard_of_hex)

VERDICT_SCHEMA = pa.schema([("order", pa.int64()), ("stage", pa.string()), ("reason", pa.string()),
                            ("dup_of", pa.string())])
EXACT_SCHEMA = pa.schema([("order", pa.int64()), ("dup_of", pa.string())])
EDGE_SCHEMA = pa.schema([("order", pa.int64()), ("linked_to", pa.int64())])


def run(alive: ray.data.Dataset, config: DedupConfig) -> tuple[pa.Table, dict[str, float]]:
    """Verdicts (order, stage, reason, dup_of) for every duplicate among `alive` (order, id, text),
    and the seconds each dedup stage took."""
    verdicts = [VERDICT_SCHEMA.empty_table()]
    seconds = {}
    exact = EXACT_SCHEMA.empty_table()
    if config.exact:
        start = time.perf_counter()
        exact = exact_dedup(alive, config.shards)
        verdicts.append(_verdicts(exact, "exact_dedup", "exact_duplicate"))
        seconds["exact_dedup"] = time.perf_counter() - start
    if config.near:
        start = time.perf_counter()
        if exact.num_rows:
            removed = exact["order"]
            alive = alive.map_batches(lambda b: b.filter(pc.invert(pc.is_in(b["order"], removed))),
                                      batch_format="pyarrow")
        verdicts.append(_verdicts(near_dedup(alive, config), "near_dedup", "near_duplicate"))
        seconds["near_dedup"] = time.perf_counter() - start
    return pa.concat_tables(verdicts).sort_by("order"), seconds


def _verdicts(dups: pa.Table, stage: str, reason: str) -> pa.Table:
    n = dups.num_rows
    return pa.table({"order": dups["order"], "stage": pa.array([stage] * n, pa.string()),
                     "reason": pa.array([reason] * n, pa.string()), "dup_of": dups["dup_of"]})


def exact_dedup(alive: ray.data.Dataset, shards: int) -> pa.Table:
    """(order, dup_of) of every document whose normalized text's SHA-1 an earlier document already has."""

    def keyed(batch: pa.Table) -> pa.Table:
        keys = pa.array([sha1_key(t) for t in batch["text"].to_pylist()], pa.string())
        return pa.table({"order": batch["order"], "id": batch["id"], "key": keys,
                         "shard": shard_of_hex(keys, shards)})

    duplicates = (alive.map_batches(keyed, batch_format="pyarrow")
                  .groupby("shard", num_partitions=shards).map_groups(exact_duplicates, batch_format="pyarrow"))
    return collect(duplicates, EXACT_SCHEMA)


def near_dedup(alive: ray.data.Dataset, config: DedupConfig) -> pa.Table:
    """(order, dup_of) of every document in a MinHash/LSH cluster that is not the cluster's first document."""
    bands, rows = (config.bands, config.rows) if config.bands else optimal_bands(
        config.threshold, config.num_perm, false_positive_weight=0.1 if config.verify else 0.5)
    hasher = MinHasher(config.num_perm, config.shingle_words, config.seed)
    verify = config.threshold if config.verify else None

    def bucket_rows(batch: pa.Table) -> pa.Table:
        """One row per (document, band): the bucket it falls in, and its signature for verification."""
        signatures = hasher.signatures(batch["text"].to_pylist())
        buckets = band_hashes(signatures, bands, rows)
        n = batch.num_rows
        columns = {
            "order": pa.array(np.repeat(batch["order"].to_numpy(), bands)),
            "bucket": pa.array(buckets.ravel()),
            "shard": pa.array((buckets.ravel() % np.uint64(config.shards)).astype(np.int32)),
        }
        if verify is not None:
            flat = pa.array(np.repeat(signatures, bands, axis=0).ravel())
            columns["signature"] = pa.FixedSizeListArray.from_arrays(flat, config.num_perm)
        assert len(columns["order"]) == n * bands
        return pa.table(columns)

    edges = (alive.map_batches(bucket_rows, batch_format="pyarrow")
             .groupby("shard", num_partitions=config.shards)
             .map_groups(bucket_edges, batch_format="pyarrow",
                         fn_kwargs={"num_perm": config.num_perm, "verify_threshold": verify}))
    survivor_of = components(collect(edges, EDGE_SCHEMA))
    if not survivor_of:
        return EXACT_SCHEMA.empty_table()
    ids = _ids_of(alive, set(survivor_of.values()))
    orders = sorted(survivor_of)
    return pa.table({"order": pa.array(orders, pa.int64()),
                     "dup_of": pa.array([ids[survivor_of[o]] for o in orders], pa.string())})


def _ids_of(alive: ray.data.Dataset, orders: set[int]) -> dict[int, str]:
    wanted = pa.array(sorted(orders), pa.int64())
    found = collect(alive.select_columns(["order", "id"]).map_batches(
        lambda b: b.filter(pc.is_in(b["order"], wanted)), batch_format="pyarrow"),
        pa.schema([("order", pa.int64()), ("id", pa.string())]))
    return dict(zip(found["order"].to_pylist(), found["id"].to_pylist()))
