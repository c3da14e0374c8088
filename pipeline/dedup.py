"""Exact and near dedup as Ray Data operations over the documents that survived the filters.

Both partition by hash: every row of one hash group (exact) or one LSH bucket (near) lands in the same
shard, shards are spread over workers, and survivors are chosen by the fixed `order`, so the verdicts
are the same whatever the number of workers, shards or blocks.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import ray

from pipeline.config import DedupConfig
from pipeline.engine import collect
from stages.dedup import (MinHasher, band_hashes, bucket_candidates, components, exact_duplicates, exact_jaccard,
                          optimal_bands, recall_bands,
                          sha1_keys, shard_of_hex)

VERDICT_SCHEMA = pa.schema([("order", pa.int64()), ("stage", pa.string()), ("reason", pa.string()),
                            ("dup_of", pa.string())])
EXACT_SCHEMA = pa.schema([("order", pa.int64()), ("dup_of", pa.string())])
EDGE_SCHEMA = pa.schema([("order", pa.int64()), ("linked_to", pa.int64())])


def run(alive: ray.data.Dataset, config: DedupConfig, work: Path) -> tuple[pa.Table, dict[str, float]]:
    """Verdicts (order, stage, reason, dup_of) for every duplicate among `alive` (order, id, text),
    and the seconds each dedup stage took. `work` is a scratch folder for the signatures."""
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
        verdicts.append(_verdicts(near_dedup(alive, config, work), "near_dedup", "near_duplicate"))
        seconds["near_dedup"] = time.perf_counter() - start
    return pa.concat_tables(verdicts).sort_by("order"), seconds


def _verdicts(dups: pa.Table, stage: str, reason: str) -> pa.Table:
    n = dups.num_rows
    return pa.table({"order": dups["order"], "stage": pa.array([stage] * n, pa.string()),
                     "reason": pa.array([reason] * n, pa.string()), "dup_of": dups["dup_of"]})


def exact_dedup(alive: ray.data.Dataset, shards: int) -> pa.Table:
    """(order, dup_of) of every document whose normalized text's SHA-1 an earlier document already has."""

    def keyed(batch: pa.Table) -> pa.Table:
        keys = pa.array(sha1_keys(batch["text"]), pa.string())
        return pa.table({"order": batch["order"], "id": batch["id"], "key": keys,
                         "shard": shard_of_hex(keys, shards)})

    duplicates = (alive.map_batches(keyed, batch_format="pyarrow")
                  .groupby("shard", num_partitions=shards).map_groups(exact_duplicates, batch_format="pyarrow"))
    return collect(duplicates, EXACT_SCHEMA)


def near_dedup(alive: ray.data.Dataset, config: DedupConfig, work: Path) -> pa.Table:
    """(order, dup_of) of every document in a MinHash/LSH cluster that is not the cluster's first document.

    1. signatures, per batch, written once to `work` (they are read twice: bands, then verification);
    2. band buckets, hash-partitioned into shards so no worker holds all buckets; candidate pairs per shard;
    3. verification of candidates by exact (or estimated) Jaccard, with data of candidate documents only;
    4. connected components (stages.dedup.components) and each cluster's first document as survivor.
    """
    if config.bands:
        bands, rows = config.bands, config.rows
    elif config.verify == "none":
        bands, rows = optimal_bands(config.threshold, config.num_perm)
    else:
        bands, rows = recall_bands(config.threshold, config.num_perm)
    hasher = MinHasher(config.num_perm, config.shingle_words, config.seed)
    k, shards = config.num_perm, config.shards

    def sign(batch: pa.Table) -> pa.Table:
        signatures = hasher.signatures(batch["text"])
        return pa.table({"order": batch["order"],
                         "signature": pa.FixedSizeListArray.from_arrays(pa.array(signatures.ravel()), k)})

    def bucket_rows(batch: pa.Table) -> pa.Table:
        """One row per (document, band): the bucket it falls in and the shard that owns the bucket."""
        buckets = band_hashes(_signature_matrix(batch, k), bands, rows).ravel()
        return pa.table({"order": np.repeat(batch["order"].to_numpy(), bands), "bucket": buckets,
                         "shard": (buckets % np.uint64(shards)).astype(np.int32)})

    folder = work / "signatures"
    alive.map_batches(sign, batch_format="pyarrow").write_parquet(str(folder))
    signatures = ray.data.read_parquet(str(folder))
    candidates = collect(signatures.map_batches(bucket_rows, batch_format="pyarrow")
                         .groupby("shard", num_partitions=shards)
                         .map_groups(bucket_candidates, batch_format="pyarrow"), EDGE_SCHEMA)
    sources, targets = candidates["order"].to_numpy(), candidates["linked_to"].to_numpy()
    if config.verify == "estimated" and len(sources):
        keep = _estimate_reaches(signatures, sources, targets, k, config.threshold)
        sources, targets = sources[keep], targets[keep]
    elif config.verify == "exact" and len(sources):
        keep = _jaccard_reaches(alive, hasher, sources, targets, config.threshold)
        sources, targets = sources[keep], targets[keep]
    members, survivors = components(sources, targets)
    if not len(members):
        return EXACT_SCHEMA.empty_table()
    ids = _ids_of(alive, survivors)
    return pa.table({"order": pa.array(members, pa.int64()),
                     "dup_of": pa.array([ids[s] for s in survivors.tolist()], pa.string())})


def _signature_matrix(batch: pa.Table, k: int) -> np.ndarray:
    column = batch["signature"].combine_chunks() if isinstance(batch["signature"], pa.ChunkedArray) else batch["signature"]
    return pc.list_flatten(column).to_numpy().reshape(-1, k)


def _jaccard_reaches(alive: ray.data.Dataset, hasher: MinHasher, sources, targets, threshold: float) -> np.ndarray:
    """Mask of candidate pairs whose exact shingle Jaccard reaches the threshold. The shingle sets of
    documents in some candidate pair are computed by the workers and brought to the driver (8 bytes per
    distinct shingle per candidate document)."""
    wanted = pa.array(np.unique(np.concatenate([sources, targets])))

    def shingle_sets(batch: pa.Table) -> pa.Table:
        batch = batch.filter(pc.is_in(batch["order"], wanted))
        sets = hasher.shingle_sets(batch["text"])
        return pa.table({"order": batch["order"], "shingles": pa.array(sets, pa.list_(pa.uint64()))})

    found = collect(alive.map_batches(shingle_sets, batch_format="pyarrow"),
                    pa.schema([("order", pa.int64()), ("shingles", pa.list_(pa.uint64()))])).sort_by("order")
    orders = found["order"].to_numpy()
    column = found["shingles"].combine_chunks()
    flat, offsets = column.values.to_numpy(), column.offsets.to_numpy()
    a, b = np.searchsorted(orders, sources), np.searchsorted(orders, targets)
    return np.array([exact_jaccard(flat[offsets[i]:offsets[i + 1]], flat[offsets[j]:offsets[j + 1]]) >= threshold
                     for i, j in zip(a.tolist(), b.tolist())], dtype=bool)


def _estimate_reaches(signatures: ray.data.Dataset, sources, targets, k: int, threshold: float) -> np.ndarray:
    """Mask of candidate pairs whose estimated Jaccard reaches the threshold. Only the signatures of
    documents in some candidate pair come to the driver (k * 4 bytes each)."""
    wanted = pa.array(np.unique(np.concatenate([sources, targets])))
    found = collect(signatures.map_batches(lambda b: b.filter(pc.is_in(b["order"], wanted)), batch_format="pyarrow"),
                    pa.schema([("order", pa.int64()), ("signature", pa.list_(pa.uint32(), k))])).sort_by("order")
    orders, matrix = found["order"].to_numpy(), _signature_matrix(found, k)
    a, b = np.searchsorted(orders, sources), np.searchsorted(orders, targets)
    keep = np.zeros(len(sources), dtype=bool)
    for start in range(0, len(sources), 1 << 16):
        chunk = slice(start, start + (1 << 16))
        keep[chunk] = (matrix[a[chunk]] == matrix[b[chunk]]).mean(axis=1) >= threshold
    return keep


def _ids_of(alive: ray.data.Dataset, orders: np.ndarray) -> dict[int, str]:
    wanted = pa.array(np.unique(orders))
    found = collect(alive.select_columns(["order", "id"]).map_batches(
        lambda b: b.filter(pc.is_in(b["order"], wanted)), batch_format="pyarrow"),
        pa.schema([("order", pa.int64()), ("id", pa.string())]))
    return dict(zip(found["order"].to_pylist(), found["id"].to_pylist()))
