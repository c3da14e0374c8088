"""Normalization, hashing, MinHash and the per-shard dedup work, on plain arrays and tables."""

import hashlib
import unicodedata

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import CRAWL_SAMPLE
from stages.dedup import (
    MinHasher,
    band_hashes,
    bucket_candidates,
    components,
    estimated_jaccard,
    exact_duplicates,
    exact_jaccard,
    normalize,
    optimal_bands,
    pair_agreements,
    pair_jaccards,
    recall_bands,
    resolve_roots,
    sha1_keys,
    union_edges,
)
from stages.dedup import FORMAT, WHITE_SPACE


def shingles(text, n=5):
    words = text.lower().split()
    return {" ".join(words[i : i + n]) for i in range(len(words) - n + 1)}


def jaccard(a, b):
    return len(shingles(a) & shingles(b)) / len(shingles(a) | shingles(b))


def test_normalization_and_sha1():
    assert normalize(pa.array(["  The River\n\tcarries  SAND "])).to_pylist() == ["the river carries sand"]
    keys = sha1_keys(pa.array(["The River  carries", CRAWL_SAMPLE[0], CRAWL_SAMPLE[3], CRAWL_SAMPLE[5]]))
    assert keys[0] == hashlib.sha1(b"the river carries").hexdigest()
    assert keys[1] == keys[2]  # page 3: page 0 re-crawled with other capitals and spacing
    assert keys[1] != keys[3]


SENTENCE = "Über the café the naïve señor read his résumé of the façade déjà vu by the Straße"


def separated_by(separator: str) -> str:
    return SENTENCE.replace(" ", separator)


@pytest.mark.parametrize(
    "variant",
    [
        pytest.param(separated_by("\u2003"), id="em space U+2003"),
        pytest.param(separated_by("\u3000"), id="ideographic space U+3000"),
        pytest.param(separated_by("\u202f"), id="narrow no-break space U+202F"),
        pytest.param(separated_by("\u0085"), id="next line U+0085"),
        pytest.param(separated_by("\u2028"), id="line separator U+2028"),
        pytest.param(separated_by(" \u2029\t "), id="paragraph separator and a run of spaces"),
        pytest.param(unicodedata.normalize("NFD", SENTENCE), id="NFD against NFC"),
        pytest.param(" ".join(w[:2] + "\u200b" + w[2:] for w in SENTENCE.split()), id="zero-width space inside words"),
        pytest.param(
            SENTENCE.replace("ca", "ca\u00ad").replace("the", "t\u200dhe\ufeff"), id="soft hyphen, joiner, BOM"
        ),
        pytest.param(SENTENCE.upper(), id="upper case (STRASSE)"),
        pytest.param(SENTENCE.replace("the", "ｔｈｅ"), id="full-width letters"),
    ],
)
def test_equivalent_texts_have_the_same_key_and_jaccard_1_in_both_kernels(variant):
    hasher = MinHasher(num_perm=64)
    texts = pa.array([SENTENCE, variant])
    assert normalize(texts).to_pylist()[1] == normalize(texts).to_pylist()[0]
    first, second = sha1_keys(texts)
    assert first == second
    signatures = hasher.signatures(texts)
    assert estimated_jaccard(signatures[0], signatures[1]) == 1.0
    sets = hasher.shingle_sets(texts)
    assert len(sets[0]) == len(SENTENCE.split()) - 4 and exact_jaccard(*sets) == 1.0


def test_the_character_tables_are_unicodes():
    everything = [chr(c) for c in range(0x110000)]
    listed = lambda ranges: {c for first, last in ranges for c in range(first, last + 1)}  # noqa: E731
    assert listed(FORMAT) == {ord(c) for c in everything if unicodedata.category(c) == "Cf"}
    # Python's isspace is Unicode's White_Space plus the four ASCII information separators
    assert listed(WHITE_SPACE) == {ord(c) for c in everything if c.isspace()} - {0x1C, 0x1D, 0x1E, 0x1F}


def reference_normalize(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(
        " " if c.isspace() and c not in "\x1c\x1d\x1e\x1f" else c for c in folded if unicodedata.category(c) != "Cf"
    )
    return " ".join(w for w in kept.split(" ") if w)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
        | st.lists(
            st.sampled_from(
                ["a", "B", " ", "\u2003", "\u200b", "\u0085", "e\u0301", "ß", "İ", "ﬁ", "日本", "🌍", "\u00ad", "\t\n"]
            ),
            max_size=12,
        ).map("".join),
        max_size=6,
    )
)
def test_normalize_is_nfkc_casefold_with_unicode_word_breaks(texts):
    assert normalize(pa.array(texts, pa.string())).to_pylist() == [reference_normalize(t) for t in texts]


def test_signatures_compare_lowercased_words_and_shingles():
    hasher = MinHasher(num_perm=64)
    sig = hasher.signatures(["A B C D E f", "a b c d e F", "a b\u00a0c d\te  f", "a b c d e g", "x y", "", "x y"])
    assert (sig[0] == sig[1]).all() and (sig[0] == sig[2]).all()  # case, no-break space and tabs do not matter
    assert 0 < estimated_jaccard(sig[0], sig[3]) < 1  # one of two shingles differs
    assert (sig[4] == sig[6]).all() and sig[4].max() < 2**32 - 1  # a short text is one shingle, densified
    assert (sig[5] == 2**32 - 1).all()  # no words, no signature


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
    whole = hasher.signatures(CRAWL_SAMPLE)
    assert np.array_equal(whole[2:4], hasher.signatures(CRAWL_SAMPLE[2:4]))
    sliced = pa.array(CRAWL_SAMPLE).slice(3, 3)  # an Arrow slice starts inside the buffers
    assert np.array_equal(whole[3:6], hasher.signatures(sliced))


def test_optimal_bands_like_datasketch():
    datasketch = pytest.importorskip("datasketch")
    for threshold in (0.5, 0.7, 0.8):
        lsh = datasketch.MinHashLSH(threshold=threshold, num_perm=128)
        assert optimal_bands(threshold, 128) == (lsh.b, lsh.r)


def test_recall_bands_find_pairs_at_the_threshold():
    for threshold in (0.5, 0.7, 0.8, 0.9):
        bands, rows = recall_bands(threshold, 128)
        assert bands * rows <= 128
        assert 1 - (1 - threshold**rows) ** bands >= 0.98
        fewer = 128 // (rows + 1)  # one more row per band would miss more than 2% of pairs at the threshold
        assert 1 - (1 - threshold ** (rows + 1)) ** fewer < 0.98
    assert recall_bands(0.7, 128) == (25, 5)


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


def test_bucket_candidates_link_members_to_earlier_ones():
    shard = pa.table({"order": [5, 1, 9, 7, 1, 3], "bucket": pa.array([100, 100, 100, 200, 300, 300], pa.uint64())})
    pairs = set(zip(*(bucket_candidates(shard)[c].to_pylist() for c in ("order", "linked_to"))))
    assert pairs == {(5, 1), (9, 1), (9, 5), (3, 1)}  # bucket 200 has one member: no pair
    big = pa.table({"order": list(range(100)), "bucket": pa.array([7] * 100, pa.uint64())})
    pairs = bucket_candidates(big)
    assert pairs.num_rows < 100 * 9 and set(pairs["order"].to_pylist()) == set(range(1, 100))


def test_components_keep_the_smallest_id():
    members, roots = components(np.array([8, 6, 4, 12]), np.array([6, 4, 2, 11]))
    assert dict(zip(members.tolist(), roots.tolist())) == {4: 2, 6: 2, 8: 2, 12: 11}
    # a long chain given in the worst order still resolves to its smallest member
    chain = np.arange(1000, 0, -1)
    members, roots = components(chain, chain - 1)
    assert set(roots.tolist()) == {0} and len(members) == 1000


def test_union_find_gives_the_same_roots_whatever_the_edge_order_and_chunks():
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 500, 400), rng.integers(0, 500, 400)
    reference = np.arange(500)
    union_edges(reference, a, b)
    resolve_roots(reference)
    shuffled = rng.permutation(400)
    parent = np.arange(500)
    for chunk in np.array_split(shuffled, 7):  # edges in another order, in chunks, each pair reversed
        union_edges(parent, b[chunk], a[chunk])
    resolve_roots(parent)
    assert np.array_equal(parent, reference)
    # every root is the smallest id of its component (brute force by label spreading)
    label = np.arange(500)
    for _ in range(500):
        low = np.minimum(label[a], label[b])
        np.minimum.at(label, a, low)
        np.minimum.at(label, b, low)
    assert np.array_equal(reference, label)


def test_pair_jaccards_match_exact_jaccard():
    rng = np.random.default_rng(5)
    sets = [np.unique(rng.integers(0, 60, rng.integers(0, 40))).astype(np.uint64) for _ in range(30)]
    flat = np.concatenate(sets)
    ends = np.cumsum([len(s) for s in sets])
    starts = ends - [len(s) for s in sets]
    a, b = rng.integers(0, 30, 100), rng.integers(0, 30, 100)
    expected = [exact_jaccard(sets[i], sets[j]) for i, j in zip(a, b)]
    assert np.allclose(pair_jaccards(flat, starts, ends, a, b), expected)
    signatures = rng.integers(0, 3, (30, 16)).astype(np.uint32)
    assert np.allclose(
        pair_agreements(signatures, a, b), [np.mean(signatures[i] == signatures[j]) for i, j in zip(a, b)]
    )
