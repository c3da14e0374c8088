"""Normalization, hashing, MinHash and the per-shard dedup work, on plain arrays and tables."""
import hashlib

import numpy as np
import pyarrow as pa
import pytest

from helpers import CRAWL_SAMPLE
from stages.dedup import (MinHasher, band_hashes, bucket_edges, components, estimated_jaccard, exact_duplicates,
                          normalize, optimal_bands, sha1_key, shingle_hashes)


def shingles(text, n=5):
    words = text.lower().split()
    return {" ".join(words[i:i + n]) for i in range(len(words) - n + 1)}


def jaccard(a, b):
    return len(shingles(a) & shingles(b)) / len(shingles(a) | shingles(b))


def test_normalization_and_sha1():
    assert normalize("  The River\n\tcarries  SAND ") == "the river carries sand"
    assert sha1_key("The River  carries") == hashlib.sha1(b"the river carries").hexdigest()
    assert sha1_key(CRAWL_SAMPLE[0]) == sha1_key(CRAWL_SAMPLE[3])  # page 3: page 0 re-crawled
    assert sha1_key(CRAWL_SAMPLE[0]) != sha1_key(CRAWL_SAMPLE[5])


def test_shingle_hashes_match_distinct_shingles():
    text = "a b c d e f g a b c d e"
    assert len(shingle_hashes(text)) == len(shingles(text)) == 7
    assert len(shingle_hashes("only three words")) == 1
    assert len(shingle_hashes("")) == 0
    assert np.array_equal(shingle_hashes("A B C D E"), shingle_hashes("a b c d e"))


def test_minhash_estimate_tracks_exact_jaccard():
    rng = np.random.default_rng(0)
    vocabulary = [f"w{i}" for i in range(3000)]
    base = list(rng.choice(vocabulary, 400))
    texts, truths = [" ".join(base)], []
    for changed in (0, 20, 60, 120, 200, 400):
        words = list(base)
        for i in rng.choice(len(words), changed, replace=False):
            words[i] = f"x{rng.integers(1_000_000)}"
        texts.append(" ".join(words))
        truths.append(jaccard(texts[0], texts[-1]))
    signatures = MinHasher(num_perm=256, seed=3).signatures(texts)
    estimates = [estimated_jaccard(signatures[0], s) for s in signatures[1:]]
    for truth, estimate in zip(truths, estimates):
        assert abs(truth - estimate) < 0.08, (truth, estimate)
    assert estimates[0] == 1.0 and estimates[-1] < 0.05


def test_crawl_sample_near_duplicate_estimate():
    assert jaccard(CRAWL_SAMPLE[0], CRAWL_SAMPLE[5]) == pytest.approx(0.78, abs=0.01)
    signatures = MinHasher().signatures(CRAWL_SAMPLE)
    assert estimated_jaccard(signatures[0], signatures[5]) >= 0.7
    assert estimated_jaccard(signatures[0], signatures[6]) < 0.1


def test_signatures_do_not_depend_on_batching():
    hasher = MinHasher(num_perm=64)
    whole = hasher.signatures(CRAWL_SAMPLE, chunk=1 << 15)
    assert np.array_equal(whole, hasher.signatures(CRAWL_SAMPLE, chunk=7))
    assert np.array_equal(whole[2:4], hasher.signatures(CRAWL_SAMPLE[2:4]))


def test_optimal_bands_like_datasketch():
    datasketch = pytest.importorskip("datasketch")
    for threshold in (0.5, 0.7, 0.8):
        lsh = datasketch.MinHashLSH(threshold=threshold, num_perm=128)
        assert optimal_bands(threshold, 128) == (lsh.b, lsh.r)


def test_band_hashes_equal_bands_collide():
    signatures = np.array([[1, 2, 3, 4], [1, 2, 9, 9], [7, 2, 3, 4]], dtype=np.uint32)
    buckets = band_hashes(signatures, bands=2, rows=2)
    assert buckets[0, 0] == buckets[1, 0] and buckets[0, 1] != buckets[1, 1]
    assert buckets[0, 1] == buckets[2, 1] and buckets[0, 0] != buckets[2, 0]
    assert len(set(band_hashes(np.zeros((1, 4), np.uint32), 2, 2)[0])) == 2  # band number is mixed in


def test_exact_duplicates_keep_first_in_order():
    shard = pa.table({"order": [30, 10, 20, 40], "id": ["c", "a", "b", "d"], "key": ["k", "k", "j", "k"]})
    dups = exact_duplicates(shard).sort_by("order").to_pylist()
    assert dups == [{"order": 30, "dup_of": "a"}, {"order": 40, "dup_of": "a"}]


def test_bucket_edges_and_components():
    sig = lambda v: [v] * 4  # noqa: E731
    shard = pa.table({
        "order": [5, 1, 9, 7, 1, 3],
        "bucket": pa.array([100, 100, 100, 200, 300, 300], pa.uint64()),
        "signature": pa.array([sig(1), sig(1), sig(2), sig(3), sig(1), sig(1)], pa.list_(pa.uint32(), 4)),
    })
    edges = bucket_edges(shard, num_perm=4, verify_threshold=0.9)
    # 5 -> 1 confirmed; 9 differs from both earlier members; bucket 200 is alone; 3 -> 1 confirmed
    assert sorted(zip(edges["order"].to_pylist(), edges["linked_to"].to_pylist())) == [(3, 1), (5, 1)]
    unverified = bucket_edges(shard, num_perm=4, verify_threshold=None)
    assert (9, 1) in set(zip(unverified["order"].to_pylist(), unverified["linked_to"].to_pylist()))
    chain = pa.table({"order": [8, 6, 4, 12], "linked_to": [6, 4, 2, 11]})
    assert components(chain) == {4: 2, 6: 2, 8: 2, 12: 11}
