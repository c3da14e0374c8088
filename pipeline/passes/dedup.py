"""Exact and near dedup as data-parallel operations (pipeline.engines.engine) over the documents that survived the
filters.

Both partition by hash: every row of one hash group (exact) or one LSH bucket (near) lands in the same
shard, shards are spread over workers, and survivors are chosen by the fixed `order`, so the verdicts
are the same whatever the number of workers, shards or blocks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from pipeline.passes import dedup_index
from pipeline.engines import engine
from pipeline.config import DedupConfig
from stages.dedup import (
    MinHasher,
    band_hashes,
    bucket_candidates,
    exact_groups,
    normalize,
    optimal_bands,
    pair_agreements,
    pair_jaccards,
    recall_bands,
    sha1_of_normalized,
    shard_of_hex,
)

VERDICT_SCHEMA = pa.schema(
    [("order", pa.int64()), ("stage", pa.string()), ("reason", pa.string()), ("dup_of", pa.string())]
)
# a duplicate, the id its verdict names, and its cluster's first document (the survivor)
EXACT_SCHEMA = pa.schema([("order", pa.int64()), ("dup_of", pa.string()), ("first", pa.int64())])
DUP_COUNT_SCHEMA = pa.schema([("order", pa.int64()), ("dup_count", pa.int64())])


@dataclass
class DedupResult:
    verdicts: pa.Table  # VERDICT_SCHEMA, by order
    seconds: dict[str, float]  # per dedup stage
    dup_counts: pa.Table | None  # DUP_COUNT_SCHEMA: each survivor with copies; None: dedup off


def run(filtered: Path, config: DedupConfig, work: Path) -> tuple[pa.Table, dict[str, float]]:
    """Verdicts (order, stage, reason, dup_of) for every duplicate among the alive documents (stage null) of
    the Parquet folder `filtered` (order, id, text, stage), and the seconds each dedup stage took. `work` is
    a scratch folder the driver can read. (run_pass, without earlier outputs or an index.)"""
    result = run_pass(filtered, config, work)
    return result.verdicts, result.seconds


def run_pass(filtered: Path, config: DedupConfig, work: Path, index: Path | None = None) -> DedupResult:
    """The dedup pass: verdicts, seconds and cluster sizes over the alive documents of `filtered` and the
    entries of every earlier output in `config.against` (pipeline/passes/dedup_index.py), which come first in the
    fixed order and so always survive. With `index`, the index of everything read (earlier entries and this
    run's documents) is written there.

    One pass over the text writes each document's SHA-1 key, MinHash signature and (verify: exact) shingle
    set to `work/hashes`, the earlier entries are copied beside them, and both dedup stages work from there
    (the time is counted in the first stage that runs)."""
    if not (config.exact or config.near):
        return DedupResult(VERDICT_SCHEMA.empty_table(), {}, None)
    verdicts = [VERDICT_SCHEMA.empty_table()]
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    hasher = MinHasher(config.num_perm, config.shingle_words, config.seed)
    hashes = work / "hashes"
    with_sets = config.near and config.verify == "exact"

    def hash_alive(batch: pa.Table) -> pa.Table:
        return _hash_batch(_alive(batch), True, hasher if config.near else None, shingles=with_sets)

    engine.map_to_parquet(filtered, hash_alive, hashes, columns=["order", "id", "text", "stage"])
    earlier = dedup_index.copy_entries(config.against, hashes, config)
    if not any(hashes.glob("*.parquet")):  # nothing survived the filters
        return DedupResult(verdicts[0], seconds, DUP_COUNT_SCHEMA.empty_table())
    orders = np.sort(pq.read_table(hashes, columns=["order"])["order"].to_numpy())
    exact = EXACT_SCHEMA.empty_table()
    if config.exact:
        exact = exact_dedup(hashes, config.shards)
        verdicts.append(_verdicts(exact, "exact_dedup", "exact_duplicate"))
        seconds["exact_dedup"] = time.perf_counter() - start
        start = time.perf_counter()
    near = EXACT_SCHEMA.empty_table()
    if config.near:
        near = near_dedup(hashes, orders, exact["order"].to_numpy(), config, work)
        verdicts.append(_verdicts(near, "near_dedup", "near_duplicate"))
        seconds["near_dedup"] = time.perf_counter() - start
    cluster = clusters(orders, exact, near)
    if index is not None:
        dedup_index.write(index, hashes, orders, cluster, earlier, config, work / "index")
    new = verdicts_of_new(pa.concat_tables(verdicts))
    return DedupResult(new.sort_by("order"), seconds, dup_counts(cluster))


def verdicts_of_new(verdicts: pa.Table) -> pa.Table:
    """The verdicts on this run's documents (earlier outputs' entries have negative orders and always survive)."""
    return verdicts.filter(pc.greater_equal(verdicts["order"], 0))


def clusters(orders: np.ndarray, exact: pa.Table, near: pa.Table) -> np.ndarray:
    """Each document's cluster (the order of its first document, the one that survives), for the sorted
    `orders`: a near duplicate's component's first; an exact duplicate's group's first's cluster (the group's
    first was not an exact duplicate, so its own cluster is final after the near stage)."""
    cluster = orders.copy()
    cluster[np.searchsorted(orders, near["order"].to_numpy())] = near["first"].to_numpy()
    removed = np.searchsorted(orders, exact["order"].to_numpy())
    cluster[removed] = cluster[np.searchsorted(orders, exact["first"].to_numpy())]
    return cluster


def dup_counts(cluster: np.ndarray) -> pa.Table:
    """(order, dup_count) of each of this run's survivors with copies: how many documents its cluster holds,
    itself included (earlier outputs' entries included too: a cluster with one never has a survivor here)."""
    firsts, counts = np.unique(cluster, return_counts=True)
    mine = (firsts >= 0) & (counts > 1)
    return pa.table({"order": pa.array(firsts[mine], pa.int64()), "dup_count": pa.array(counts[mine], pa.int64())})


def _alive(batch: pa.Table) -> pa.Table:
    """The documents every per-document stage kept."""
    return batch.filter(pc.is_null(batch["stage"])).drop_columns(["stage"])


def _hash_batch(batch: pa.Table, exact: bool, hasher: MinHasher | None, shingles: bool = False) -> pa.Table:
    """A batch's hashes (HASHES_SCHEMA's columns): `output` is null (this run's documents)."""
    columns = {"order": batch["order"], "id": batch["id"], "output": pa.nulls(batch.num_rows, pa.string())}
    normalized = normalize(batch["text"])  # once for every hash
    if exact:
        columns["key"] = pa.array(sha1_of_normalized(normalized), pa.string())
    if hasher is not None:
        signatures = hasher.signatures_of_normalized(normalized)
        columns["signature"] = pa.FixedSizeListArray.from_arrays(pa.array(signatures.ravel()), hasher.num_perm)
    if hasher is not None and shingles:
        columns["shingles"] = pa.array(_shingle_sets(hasher, normalized), pa.list_(pa.uint64()))
    return pa.table(columns)


def _shingle_sets(hasher: MinHasher, normalized: pa.Array) -> list[np.ndarray]:
    """Each normalized text's sorted set of shingle hashes (for exact Jaccard)."""
    flat, counts = hasher.shingle_hashes(normalized)
    starts = np.r_[0, np.cumsum(counts)]
    return [np.unique(flat[start:end]) for start, end in zip(starts[:-1], starts[1:])]


def _verdicts(dups: pa.Table, stage: str, reason: str) -> pa.Table:
    n = dups.num_rows
    return pa.table(
        {
            "order": dups["order"],
            "stage": pa.array([stage] * n, pa.string()),
            "reason": pa.array([reason] * n, pa.string()),
            "dup_of": dups["dup_of"],
        }
    )


def exact_dedup(hashes: Path, shards: int) -> pa.Table:
    """(order, dup_of, first) of every document (in `hashes`: order, id, key) whose normalized text's SHA-1 key
    an earlier document already has. Rows are partitioned by key, so each key's group is in one shard."""

    def with_shard(batch: pa.Table) -> pa.Table:
        return batch.append_column("shard", shard_of_hex(batch["key"], shards))

    return engine.group_to_table(
        hashes, "shard", shards, exact_groups, EXACT_SCHEMA, before=with_shard, columns=["order", "id", "key"]
    )


EDGE_CHUNK = 1 << 18  # candidate edges verified and joined at a time on the driver


def near_dedup(hashes: Path, all_orders: np.ndarray, removed: np.ndarray, config: DedupConfig, work: Path) -> pa.Table:
    """(order, dup_of, first) of every document in a MinHash/LSH cluster that is not the cluster's first
    document, among the documents in `hashes` (order, id, signature, shingles; `all_orders` theirs, sorted)
    less the exact duplicates `removed`.

    1. band buckets, hash-partitioned into shards so no worker holds all buckets; each shard's candidate
       edges are written to `work/candidates`, not gathered;
    2. the driver streams the edges in chunks of EDGE_CHUNK: each chunk is verified by exact (or
       estimated) Jaccard against the candidate documents' shingle sets (or signatures), read from
       `hashes`, spilled to a file in `work` and memory-mapped; the edges that pass go to `work/edges`;
    3. connected components of those edges (engine.connected_components: a union-find on the driver on
       Ray, large-star/small-star rounds on Spark). Each cluster's label is its smallest order, so the
       survivor is its first document in the fixed order, whatever order edges come in.

    The driver's memory is bounded by the number of documents, not of edges or shingles: 17 bytes per
    document (its order, its union-find parent, a candidate flag), 16 per candidate document (where its
    set lies in the spilled file), and one chunk of edges (about 50 bytes each).
    """
    if config.bands and config.rows:  # given together (config validation)
        bands, rows = config.bands, config.rows
    elif config.verify == "none":
        bands, rows = optimal_bands(config.threshold, config.num_perm)
    else:
        bands, rows = recall_bands(config.threshold, config.num_perm)
    k, shards = config.num_perm, config.shards
    removed_orders = pa.array(removed, pa.int64())

    def bucket_rows(batch: pa.Table) -> pa.Table:
        """One row per (document, band): the bucket it falls in and the shard that owns the bucket."""
        batch = batch.filter(pc.invert(pc.is_in(batch["order"], removed_orders)))
        buckets = band_hashes(_signature_matrix(batch, k), bands, rows).ravel()
        return pa.table(
            {
                "order": np.repeat(batch["order"].to_numpy(), bands),
                "bucket": buckets,
                "shard": (buckets % np.uint64(shards)).astype(np.int32),
            }
        )

    orders = all_orders[~np.isin(all_orders, removed)]
    engine.group_to_parquet(
        hashes,
        "shard",
        shards,
        bucket_candidates,
        work / "candidates",
        before=bucket_rows,
        columns=["order", "signature"],
    )

    candidates = work / "candidates"
    edges = candidates
    if config.verify != "none" and any(candidates.glob("*.parquet")):
        verify = _verifier(hashes, candidates, orders, config, work)
        edges = work / "edges"
        _write_verified(candidates, verify, edges)
    if not any(edges.glob("*.parquet")):
        return EXACT_SCHEMA.empty_table()
    labels = engine.connected_components(edges, orders)  # (node, label) of each document not its cluster's first
    if not labels.num_rows:
        return EXACT_SCHEMA.empty_table()
    ids = _ids_of(hashes, labels["label"].to_numpy())
    return pa.table(
        {
            "order": labels["node"],
            "dup_of": pa.array([ids[s] for s in labels["label"].to_pylist()], pa.string()),
            "first": labels["label"],
        }
    )


def _edge_chunks(folder: Path):
    """The (order, linked_to) edges of a Parquet folder, EDGE_CHUNK at a time, as numpy arrays."""
    for chunk in ds.dataset(folder, format="parquet").to_batches(batch_size=EDGE_CHUNK):
        yield chunk["order"].to_numpy(), chunk["linked_to"].to_numpy()


def _verifier(hashes: Path, candidates: Path, orders: np.ndarray, config: DedupConfig, work: Path):
    """A function (orders, orders) -> mask of the candidate pairs similar enough (config.verify)."""
    on_edge = np.zeros(len(orders), dtype=bool)
    for a, b in _edge_chunks(candidates):
        on_edge[np.searchsorted(orders, a)] = on_edge[np.searchsorted(orders, b)] = True
    on_edges = orders[on_edge]
    del on_edge
    if config.verify == "exact":
        return _exact_verifier(hashes, on_edges, work / "shingles.u64", config.threshold)
    return _estimate_verifier(hashes, on_edges, config.num_perm, work / "signatures.u32", config.threshold)


def _write_verified(candidates: Path, verify, edges: Path) -> None:
    """The candidate edges whose documents are similar enough, written as Parquet in `edges`."""
    edges.mkdir()
    with pq.ParquetWriter(
        edges / "verified.parquet", pa.schema([("order", pa.int64()), ("linked_to", pa.int64())])
    ) as out:
        for a, b in _edge_chunks(candidates):
            keep = verify(a, b)
            out.write_table(pa.table({"order": a[keep], "linked_to": b[keep]}))


def _signature_matrix(batch: pa.Table, k: int) -> np.ndarray:
    column = (
        batch["signature"].combine_chunks() if isinstance(batch["signature"], pa.ChunkedArray) else batch["signature"]
    )
    return pc.list_flatten(column).to_numpy().reshape(-1, k)


def _exact_verifier(hashes: Path, candidates: np.ndarray, path: Path, threshold: float):
    """A function (sources, targets) -> mask of pairs whose exact shingle Jaccard reaches the threshold.

    The candidate documents' shingle sets (computed with the hashes, or kept in an earlier output's index)
    are streamed from `hashes`; the driver appends them to `path` (8 bytes per distinct shingle, on disk)
    and keeps where each one starts and ends."""
    wanted = pa.array(candidates)
    starts = np.zeros(len(candidates), np.int64)
    ends = np.zeros(len(candidates), np.int64)
    written = 0
    sets = ds.dataset(hashes, format="parquet")
    with open(path, "wb") as spill:
        for batch in sets.to_batches(columns=["order", "shingles"], filter=pc.field("order").isin(wanted)):
            column = batch["shingles"]
            offsets = column.offsets.to_numpy()
            slots = np.searchsorted(candidates, batch["order"].to_numpy())
            starts[slots] = written + offsets[:-1] - offsets[0]
            ends[slots] = written + offsets[1:] - offsets[0]
            values = column.values.to_numpy()[offsets[0] : offsets[-1]]
            spill.write(values.tobytes())
            written += len(values)
    flat = np.asarray(np.memmap(path, np.uint64, "r")) if written else np.zeros(0, np.uint64)

    def reaches(sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
        a, b = np.searchsorted(candidates, sources), np.searchsorted(candidates, targets)
        return pair_jaccards(flat, starts, ends, a, b) >= threshold

    return reaches


def _estimate_verifier(hashes: Path, candidates: np.ndarray, k: int, path: Path, threshold: float):
    """A function (sources, targets) -> mask of pairs whose estimated Jaccard reaches the threshold.
    The candidate documents' signatures are spilled to `path` (k * 4 bytes each) and memory-mapped."""
    wanted = pa.array(candidates)
    spilled = np.memmap(path, np.uint32, "w+", shape=(max(1, len(candidates)), k))
    signatures = ds.dataset(hashes, format="parquet")
    for batch in signatures.to_batches(columns=["order", "signature"], filter=pc.field("order").isin(wanted)):
        batch = pa.Table.from_batches([batch])
        spilled[np.searchsorted(candidates, batch["order"].to_numpy())] = _signature_matrix(batch, k)
    spilled.flush()
    matrix = np.asarray(spilled)

    def reaches(sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
        a, b = np.searchsorted(candidates, sources), np.searchsorted(candidates, targets)
        return pair_agreements(matrix, a, b) >= threshold

    return reaches


def _ids_of(hashes: Path, orders: np.ndarray) -> dict[int, str]:
    found = ds.dataset(hashes, format="parquet").to_table(
        columns=["order", "id"], filter=pc.field("order").isin(pa.array(np.unique(orders)))
    )
    return dict(zip(found["order"].to_pylist(), found["id"].to_pylist()))
