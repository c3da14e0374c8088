"""Exact and near dedup on the engine: against brute force, across partitionings, on chains."""

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import ROOT, cli
from pipeline.passes import dedup
from pipeline.config import DedupConfig


pytestmark = pytest.mark.usefixtures("embedded_ray")  # conftest.py


def shingles(words):
    return {tuple(words[i : i + 5]) for i in range(len(words) - 4)}


def jaccard(a, b):
    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) / len(sa | sb)


def planted_corpus(n=400, seed=5):
    """Random 120-word documents; a third are copies of an earlier one with a span of words replaced."""
    rng = np.random.default_rng(seed)
    docs = [list(rng.integers(0, 5000, 120)) for _ in range(n)]
    for i in range(n // 10, n, 3):
        source = int(rng.integers(0, i))
        copy = list(docs[source])
        span, start = int(rng.integers(0, 50)), int(rng.integers(0, 70))
        copy[start : start + span] = list(rng.integers(5000, 10000, span))
        docs[i] = copy
    return docs


def as_filtered(docs, folder, blocks=4, rejected=()):
    """The documents as the filter pass leaves them (alive: stage null, except those `rejected`), in `blocks`
    Parquet files."""
    texts = [" ".join(f"w{w}" for w in d) for d in docs]
    stages = pa.array(["quality" if i in rejected else None for i in range(len(docs))], pa.string())
    table = pa.table(
        {
            "order": pa.array(range(len(docs)), pa.int64()),
            "id": [f"d{i}" for i in range(len(docs))],
            "text": texts,
            "stage": stages,
        }
    )
    folder.mkdir(parents=True)
    for i, part in enumerate(np.array_split(np.arange(len(docs)), blocks)):
        pq.write_table(table.take(part), folder / f"file-{i:06d}.parquet")
    return folder


def verdicts_of(docs, work, blocks=4, rejected=(), **settings):
    table, _ = dedup.run(as_filtered(docs, work / "filtered", blocks, rejected), DedupConfig(**settings), work)
    return dict(zip(table["order"].to_pylist(), table["dup_of"].to_pylist()))


def cluster_of(verdicts, n):
    return [int(verdicts[i][1:]) if i in verdicts else i for i in range(n)]


def test_near_dedup_agrees_with_brute_force(tmp_path):
    docs = planted_corpus()
    verdicts = verdicts_of(docs, tmp_path, exact=False)
    survivor = cluster_of(verdicts, len(docs))
    high = low = 0
    for i, j in itertools.combinations(range(len(docs)), 2):
        similarity = jaccard(docs[i], docs[j])
        if similarity >= 0.8:  # well above the 0.7 threshold: must share a cluster
            assert survivor[i] == survivor[j], (i, j, similarity)
            high += 1
        elif similarity < 0.6:  # well below: never flagged as a pair
            assert verdicts.get(j) != f"d{i}", (i, j, similarity)
            low += 1
    assert high >= 10 and low > 10_000
    for doc, survivor_id in verdicts.items():  # every survivor is the first of its cluster, and kept
        assert int(survivor_id[1:]) < doc and int(survivor_id[1:]) not in verdicts


def test_verification_modes(tmp_path):
    docs = planted_corpus(seed=9)
    exact = verdicts_of(docs, tmp_path / "a", exact=False, verify="exact")
    estimated = verdicts_of(docs, tmp_path / "b", exact=False, verify="estimated")
    unverified = verdicts_of(docs, tmp_path / "c", exact=False, verify="none")
    for doc, survivor in exact.items():
        assert jaccard(docs[doc], docs[int(survivor[1:])]) >= 0.7
    overlap = len(set(exact) & set(estimated)) / len(set(exact) | set(estimated))
    assert overlap > 0.9 and len(unverified) >= len(exact) * 0.9


def test_same_verdicts_whatever_the_partitioning(tmp_path):
    docs = planted_corpus(seed=11)
    docs += [list(d) for d in docs[:20]]  # whole copies, for exact dedup
    results = [
        verdicts_of(docs, tmp_path / f"{shards}-{blocks}", blocks=blocks, shards=shards)
        for shards, blocks in ((1, 1), (2, 3), (4, 8), (8, 2))
    ]
    assert results[0] and all(r == results[0] for r in results[1:])


def test_a_chain_is_one_cluster_with_one_survivor(tmp_path):
    rng = np.random.default_rng(1)
    a = list(rng.integers(0, 5000, 200))
    b = a[:150] + list(rng.integers(5000, 6000, 20)) + a[170:]
    c = b[:40] + list(rng.integers(6000, 7000, 22)) + b[62:]
    assert jaccard(a, b) >= 0.7 and jaccard(b, c) >= 0.7 and jaccard(a, c) < 0.7
    others = [list(rng.integers(10_000, 20_000, 200)) for _ in range(5)]
    verdicts = verdicts_of([others[0], a, others[1], b, others[2], c] + others[3:], tmp_path, exact=False)
    assert verdicts == {3: "d1", 5: "d1"}  # c joins through b; the first of the chain survives


def test_documents_the_filters_rejected_take_no_part(tmp_path):
    rng = np.random.default_rng(2)
    a, b = list(rng.integers(0, 5000, 120)), list(rng.integers(5000, 10_000, 120))
    near_b = b[:100] + list(rng.integers(10_000, 11_000, 5)) + b[105:]
    docs = [a, a, a, b, near_b]  # d0 and d3 rejected by a filter: d2 duplicates d1, d4 survives
    assert verdicts_of(docs, tmp_path, blocks=2, rejected={0, 3}) == {2: "d1"}


@pytest.mark.slow
def test_one_or_two_cpus_give_the_same_bytes(tmp_path, run_here):
    """A run on one CPU (a subprocess: its own Ray) and one on the session's Ray of two CPUs, with other dedup
    shards each."""
    out = tmp_path / "cpus-1"
    one_cpu = ["--set", "ray.num_cpus=1", "--set", "dedup.shards=3"]
    result = cli("run", str(ROOT / "configs" / "local.yaml"), "--output", str(out), *one_cpu, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    run_here(ROOT / "configs" / "local.yaml", tmp_path / "cpus-2", ["dedup.shards=6"])
    outputs = [
        {p.relative_to(run): p.read_bytes() for p in sorted(run.rglob("*.parquet"))}
        for run in (out, tmp_path / "cpus-2")
    ]
    assert outputs[0] and outputs[0] == outputs[1]
