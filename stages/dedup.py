"""Per-batch pieces of deduplication: text normalization, SHA-1 keys, MinHash signatures, LSH bands,
and the per-shard work (survivors of a hash group, candidate edges of a bucket).

The global parts (partitioning by hash across workers, connected components) are assembled by the
engine; everything here is a plain function over numpy arrays or Arrow tables.

Survivors are chosen by the fixed total order column `order` (file, then offset), so the result does
not depend on how rows were split across workers.
"""

from __future__ import annotations

import hashlib
import math
import unicodedata

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


# Raised whenever `normalize` or the MinHash kernels change what they give a text: a dedup index
# (pipeline/passes/dedup_index.py) written under another version is refused, as its keys and signatures would not match.
HASH_VERSION = 1


def normalize(texts) -> pa.Array:
    """The text both dedup stages compare (pyarrow string array or list of str in): Unicode NFKC, case-folded,
    every Unicode White_Space character (line and paragraph separators, NEL, ideographic and other wide or
    narrow spaces included) a word break, runs of them one space and none at the ends, format characters
    (category Cf: zero-width space and joiners, soft hyphen, direction marks, BOM) removed.

    NFKC and case folding run in Python on the texts that are not ASCII (about 0.1 ms for a 6,000-character
    page); the rest is one compiled pass over the batch's bytes."""
    texts = texts if isinstance(texts, (pa.Array, pa.ChunkedArray)) else pa.array(texts, pa.string())
    data, offsets = _string_bytes(_fold_non_ascii(texts))
    out = np.empty(max(1, offsets[-1] - offsets[0]), dtype=np.uint8)
    out_offsets = np.zeros(len(offsets), dtype=np.int64)
    _normalize_kernel(data, offsets, _CHAR_CLASS, out, out_offsets)
    return pa.LargeStringArray.from_buffers(len(offsets) - 1, pa.py_buffer(out_offsets), pa.py_buffer(out))


def sha1_keys(texts) -> list[str]:
    """Hex SHA-1 of each normalized text."""
    return sha1_of_normalized(normalize(texts))


def sha1_of_normalized(normalized: pa.Array) -> list[str]:
    """Hex SHA-1 of each text of `normalize`'s output."""
    data = memoryview(normalized.buffers()[2])
    offsets = np.frombuffer(normalized.buffers()[1], dtype=np.int64).tolist()
    return [hashlib.sha1(data[offsets[i] : offsets[i + 1]]).hexdigest() for i in range(len(normalized))]


def _fold_non_ascii(texts: pa.Array) -> pa.Array:
    """NFKC and Unicode case folding of the texts that need it; the kernel lowercases ASCII letters itself."""
    texts = texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts
    non_ascii = pc.invert(pc.fill_null(pc.string_is_ascii(texts), True))
    if not pc.any(non_ascii).as_py():
        return texts
    folded = [unicodedata.normalize("NFKC", t).casefold() for t in texts.filter(non_ascii).to_pylist()]
    return pc.replace_with_mask(texts, non_ascii, pa.array(folded, texts.type))


_WORD_BREAK, _REMOVED = 1, 2
# Unicode's White_Space property, and category Cf (Unicode 14, Python 3.11's unicodedata; a test checks it)
WHITE_SPACE = [
    (0x09, 0x0D),
    (0x20, 0x20),
    (0x85, 0x85),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
]
FORMAT = [
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x13438),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
]
_CHAR_CLASS = np.zeros(0x110000, dtype=np.uint8)  # per code point: 0 kept, _WORD_BREAK or _REMOVED
for _first, _last in WHITE_SPACE:
    _CHAR_CLASS[_first : _last + 1] = _WORD_BREAK
for _first, _last in FORMAT:
    _CHAR_CLASS[_first : _last + 1] = _REMOVED
_LOWER_ASCII = np.arange(256, dtype=np.uint8)
_LOWER_ASCII[65:91] += 32


@numba.njit(cache=True, nogil=True)
def _normalize_kernel(data, offsets, char_class, out, out_offsets):
    """Decode each text's UTF-8 once: ASCII letters lowercased, word breaks collapsed to one space (none
    at the ends), removed characters dropped, every other character copied as its bytes."""
    n = 0
    for text in range(len(offsets) - 1):
        pending_space = False
        start = n
        i = offsets[text]
        end = offsets[text + 1]
        while i < end:
            b = data[i]
            size = 1
            if b < 0x80:
                kind = char_class[b]
            else:
                size, code = _decode_utf8(data, i, end)
                kind = char_class[code]
            if kind == _WORD_BREAK:
                pending_space = n > start
            elif kind != _REMOVED:
                if pending_space:
                    out[n] = 32
                    n += 1
                    pending_space = False
                if size == 1:
                    out[n] = _LOWER_ASCII[b]
                    n += 1
                else:
                    for k in range(size):
                        out[n] = data[i + k]
                        n += 1
            i += size
        out_offsets[text + 1] = n


@numba.njit(cache=True, nogil=True, inline="always")
def _decode_utf8(data, i, end):
    """(bytes, code point) of the character whose first byte is data[i] >= 0x80; a stray or cut-off byte
    is one byte of its own class (code point 0x80: kept)."""
    b = np.int64(data[i])
    size = 2 if 0xC0 <= b < 0xE0 else (3 if 0xE0 <= b < 0xF0 else (4 if 0xF0 <= b < 0xF8 else 1))
    if size == 1 or i + size > end:
        return 1, 0x80
    code = b & (0x1F if size == 2 else (0x0F if size == 3 else 0x07))
    for k in range(1, size):
        code = (code << 6) | (np.int64(data[i + k]) & 0x3F)
    return size, min(code, 0x10FFFF)


def shard_of_hex(keys: pa.Array, shards: int) -> pa.Array:
    """Shard number of each hex hash: its first 8 hex digits modulo `shards`."""
    prefixes = pc.utf8_slice_codeunits(keys, 0, 8).to_pylist()
    return pa.array([int(p, 16) % shards for p in prefixes], pa.int32())


# ---------------------------------------------------------------------------------------------
# MinHash


_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_ROLL = np.uint64(0x9E3779B97F4A7C15)  # odd base of the rolling shingle hash (mod 2**64)


@numba.njit(cache=True, nogil=True, inline="always")
def _mix64(x):
    """splitmix64 finalizer (wrapping uint64 arithmetic), on a number or in place on an array."""
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


@numba.njit(cache=True, nogil=True)
def _shingle_kernel(data, offsets, shingle_words, salt, out, listed, list_starts):
    """For each normalized text (words separated by single spaces): hash each word (FNV-1a, then mixed),
    roll a polynomial hash over the last `shingle_words` word hashes (the shingle), and either keep per
    bin of `out` the smallest value (one-permutation hashing) or, when `listed` is not empty, list every
    shingle hash from list_starts[text]. Returns the number of shingles per text.

    One pass over the bytes in compiled code, a few nanoseconds per byte."""
    listing = listed.size > 0
    num_perm = np.uint64(out.shape[1])
    ring = np.zeros(shingle_words, dtype=np.uint64)
    top_power = np.uint64(1)  # _ROLL ** (shingle_words - 1): the weight of the word leaving the window
    for _ in range(shingle_words - 1):
        top_power *= _ROLL
    shingles = np.zeros(len(offsets) - 1, dtype=np.int64)
    for text in range(len(offsets) - 1):
        count = 0
        slot = 0
        rolling = np.uint64(0)
        word = _FNV_OFFSET
        in_word = False
        end = offsets[text + 1]
        for i in range(offsets[text], end + 1):
            if i < end and data[i] != 32:
                word = (word ^ np.uint64(data[i])) * _FNV_PRIME
                in_word = True
            elif in_word:
                hashed_word = _mix64(word)
                if count >= shingle_words:
                    rolling -= ring[slot] * top_power  # the oldest word leaves the window
                rolling = rolling * _ROLL + hashed_word
                ring[slot] = hashed_word
                slot = slot + 1 if slot + 1 < shingle_words else 0
                count += 1
                word = _FNV_OFFSET
                in_word = False
                if count >= shingle_words:
                    _emit(out, listed, list_starts, shingles, text, _mix64(rolling ^ salt), num_perm, listing)
        if 0 < count < shingle_words:  # a text shorter than one shingle is one shingle of all its words
            _emit(out, listed, list_starts, shingles, text, _mix64(rolling ^ salt), num_perm, listing)
    return shingles


@numba.njit(cache=True, nogil=True, inline="always")
def _emit(out, listed, list_starts, shingles, text, hashed, num_perm, listing):
    if listing:
        listed[list_starts[text] + shingles[text]] = hashed
    else:
        _keep_min(out, text, hashed, num_perm)
    shingles[text] += 1


@numba.njit(cache=True, nogil=True, inline="always")
def _keep_min(out, row, hashed, num_perm):
    """One-permutation hashing: the hash's top bits pick the bin, its low bits are the value the bin keeps."""
    bin_ = ((hashed >> np.uint64(32)) * num_perm) >> np.uint64(32)  # the top bits, scaled to [0, num_perm)
    value = np.uint32(hashed & np.uint64(0xFFFFFFFF))
    if value < out[row, bin_]:
        out[row, bin_] = value


@numba.njit(cache=True, nogil=True)
def _run_kernel(flat, starts, ends, out):
    """The signature of each run flat[starts[r]:ends[r]] of shingle hashes, bin by bin as _shingle_kernel."""
    num_perm = np.uint64(out.shape[1])
    for run in range(len(starts)):
        for i in range(starts[run], ends[run]):
            _keep_min(out, run, flat[i], num_perm)


_NOTHING = np.zeros(0, dtype=np.uint64)
_NO_STARTS = np.zeros(1, dtype=np.int64)


def _string_bytes(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The UTF-8 bytes of a string array and its offsets, as numpy views (no per-string Python work)."""
    texts = texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts
    texts = texts.cast(pa.large_string()).fill_null("")
    offsets = np.frombuffer(texts.buffers()[1], dtype=np.int64)[texts.offset : texts.offset + len(texts) + 1]
    data_buffer = texts.buffers()[2]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(1, np.uint8)
    return data, offsets


class MinHasher:
    """One-permutation MinHash with optimal densification (Shrivastava, ICML 2017).

    Each shingle is hashed once; the hash picks one of `num_perm` bins and the bin keeps the smallest
    value that falls in it. Empty bins (short texts) borrow the value of a bin chosen by a fixed hash
    sequence, the same for every text, so equal bins still occur with probability equal to the Jaccard
    similarity. Cost is O(shingles) instead of O(shingles x num_perm) for classic MinHash, with the
    same estimator quality at this size (see docs/benchmarks.md).
    """

    _ATTEMPTS = 64

    def __init__(self, num_perm: int = 128, shingle_words: int = 5, seed: int = 1):
        self.num_perm = num_perm
        self.shingle_words = shingle_words
        rng = np.random.default_rng(seed)
        self.salt = np.uint64(rng.integers(0, 2**63, dtype=np.uint64))
        self.borrow_from = rng.integers(0, num_perm, (num_perm, self._ATTEMPTS))

    def signatures(self, texts) -> np.ndarray:
        """(len(texts), num_perm) uint32 signatures of a batch (pyarrow string array or list of str), over
        the shingles of its normalized text (`normalize`)."""
        return self.signatures_of_normalized(normalize(texts))

    def signatures_of_normalized(self, normalized: pa.Array) -> np.ndarray:
        """Signatures of `normalize`'s output."""
        data, offsets = _string_bytes(normalized)
        empty = np.iinfo(np.uint32).max
        out = np.full((len(normalized), self.num_perm), empty, dtype=np.uint32)
        shingles = _shingle_kernel(data, offsets, self.shingle_words, self.salt, out, _NOTHING, _NO_STARTS)
        self._densify(out, empty, has_shingles=shingles > 0)
        return out

    def shingle_sets(self, texts) -> list[np.ndarray]:
        """Each text's set of 64-bit shingle hashes (of its normalized text), as a sorted unique array (for
        exact Jaccard)."""
        flat, counts = self.shingle_hashes(normalize(texts))
        starts = np.r_[0, np.cumsum(counts)]
        return [np.unique(flat[start:end]) for start, end in zip(starts[:-1], starts[1:])]

    def shingle_hashes(self, normalized: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """(hashes, counts): every shingle hash of each text of `normalize`'s output (words separated by single
        spaces), in word order, one text after the other, and how many each text has. A shingle's hash does
        not depend on where it stands, so these are the word n-grams (n = shingle_words) of decontamination too;
        a text shorter than a shingle has one, of all its words."""
        data, offsets = _string_bytes(normalized)
        list_starts = np.r_[0, np.cumsum(np.diff(offsets) // 2 + 1)]  # a word takes at least 2 bytes
        listed = np.zeros(max(1, list_starts[-1]), dtype=np.uint64)
        counts = _shingle_kernel(
            data, offsets, self.shingle_words, self.salt, np.zeros((0, self.num_perm), np.uint32), listed, list_starts
        )
        packed_starts = np.cumsum(counts) - counts  # where each text's hashes start once packed together
        return listed[np.arange(counts.sum()) + np.repeat(list_starts[:-1] - packed_starts, counts)], counts

    def run_signatures(self, flat: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """(runs, num_perm) uint32 signatures of runs of shingle hashes, run r being flat[starts[r]:ends[r]]:
        the signature `signatures` gives a text whose shingles they are (a window of a document, in
        decontamination)."""
        empty = np.iinfo(np.uint32).max
        out = np.full((len(starts), self.num_perm), empty, dtype=np.uint32)
        _run_kernel(flat, starts.astype(np.int64), ends.astype(np.int64), out)
        self._densify(out, empty, has_shingles=ends > starts)
        return out

    def _densify(self, signatures: np.ndarray, empty: int, has_shingles: np.ndarray) -> None:
        _densify_kernel(signatures, np.uint32(empty), has_shingles, self.borrow_from)


@numba.njit(cache=True, nogil=True)
def _densify_kernel(signatures, empty, has_shingles, borrow_from):
    """Fill each empty bin of the rows that have shingles, in place: from the first bin of its fixed sequence
    `borrow_from[bin]` that is filled, else (very short texts) from the next filled bin, circularly. Filled means
    before any borrowing, so a bin only ever borrows an original value. Compiled: windows of a few shingles
    (decontamination) leave most bins empty."""
    k = signatures.shape[1]
    filled = np.empty(k, np.bool_)
    original = np.empty(k, np.uint32)
    for row in range(signatures.shape[0]):
        if not has_shingles[row]:
            continue
        for b in range(k):
            original[b] = signatures[row, b]
            filled[b] = original[b] != empty
        for b in range(k):
            if filled[b]:
                continue
            source = -1
            for attempt in range(borrow_from.shape[1]):
                if filled[borrow_from[b, attempt]]:
                    source = borrow_from[b, attempt]
                    break
            for step in range(1, k):
                if source >= 0:
                    break
                if filled[(b + step) % k]:
                    source = (b + step) % k
            if source >= 0:
                signatures[row, b] = original[source]


def estimated_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean(a == b))


def exact_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Jaccard similarity of two sorted unique arrays of shingle hashes."""
    if len(a) == 0 and len(b) == 0:
        return 1.0
    common = len(np.intersect1d(a, b, assume_unique=True))
    return common / (len(a) + len(b) - common)


# ---------------------------------------------------------------------------------------------
# LSH


def optimal_bands(threshold: float, num_perm: int) -> tuple[int, int]:
    """(bands, rows) minimizing the false positive plus false negative areas, as datasketch does: for
    LSH whose candidates are taken without verification."""

    def probability(s, b, r):
        return 1.0 - (1.0 - s**r) ** b

    grid_low = np.linspace(0.0, threshold, 200)
    grid_high = np.linspace(threshold, 1.0, 200)
    best, best_error = (1, num_perm), math.inf
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            false_positive = np.trapezoid(probability(grid_low, b, r), grid_low)
            false_negative = np.trapezoid(1.0 - probability(grid_high, b, r), grid_high)
            error = 0.5 * false_positive + 0.5 * false_negative
            if error < best_error:
                best, best_error = (b, r), error
    return best


def recall_bands(threshold: float, num_perm: int, recall: float = 0.98) -> tuple[int, int]:
    """(bands, rows) for LSH whose candidates are verified afterwards: the most rows per band (the fewest
    candidates) that still make a pair at the threshold a candidate with probability >= `recall`.

    A false positive then only costs a comparison, a false negative is a missed duplicate. For threshold
    0.7 and 128 permutations this is 25 bands of 5 rows (0.99 at J = 0.7); datasketch's balanced choice,
    14 x 9, finds a pair at J = 0.74 only 62% of the time.
    """
    for rows in range(num_perm, 0, -1):
        bands = num_perm // rows
        if 1.0 - (1.0 - threshold**rows) ** bands >= recall:
            return bands, rows
    return num_perm, 1


def band_hashes(signatures: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """(n, bands) uint64 hash of each band's `rows` signature values, mixed with the band number."""
    out = np.empty((signatures.shape[0], bands), dtype=np.uint64)
    _band_kernel(np.ascontiguousarray(signatures), bands, rows, out)
    return out


@numba.njit(cache=True, nogil=True)
def _band_kernel(signatures, bands, rows, out):
    """Each band's hash: the band number + 1, mixed (splitmix64) with each of its values in turn."""
    for i in range(signatures.shape[0]):
        for band in range(bands):
            h = np.uint64(band + 1)
            for column in range(band * rows, (band + 1) * rows):
                h = _mix64(h ^ np.uint64(signatures[i, column]))
            out[i, band] = h


# ---------------------------------------------------------------------------------------------
# Per-shard work: each receives every row of its shard, so a hash group or bucket is never split.


def exact_duplicates(shard: pa.Table) -> pa.Table:
    """For rows (order, id, key): every row whose key was seen earlier in `order` -> (order, dup_of id)."""
    return exact_groups(shard).select(["order", "dup_of"])


def exact_groups(shard: pa.Table) -> pa.Table:
    """exact_duplicates, with each duplicate's group's first order (`first`): its cluster, for dup_count."""
    shard = shard.sort_by([("key", "ascending"), ("order", "ascending")])
    keys = shard["key"]
    same_as_previous = (
        np.r_[False, pc.equal(keys[1:], keys[:-1]).to_numpy(zero_copy_only=False)] if len(keys) else np.zeros(0, bool)
    )
    positions = np.arange(len(keys))
    group_first = np.maximum.accumulate(np.where(same_as_previous, 0, positions)) if len(keys) else positions
    duplicates = np.flatnonzero(same_as_previous)
    firsts = group_first[duplicates]
    return pa.table(
        {
            "order": shard["order"].take(duplicates),
            "dup_of": shard["id"].take(firsts),
            "first": shard["order"].take(firsts),
        }
    )


BUCKET_WINDOW = 8  # a bucket member is linked to at most this many members just before it


def bucket_candidates(shard: pa.Table) -> pa.Table:
    """Candidate pairs among documents sharing an LSH bucket (rows: order, bucket) -> (order, linked_to).

    Members of a bucket, in the fixed order, are each linked to the first member and to the few members
    just before them: enough to connect a bucket whose members are alike (a chain is a component too)
    and to let verification find a similar earlier member, without listing all pairs of a big bucket.
    """
    shard = shard.sort_by([("bucket", "ascending"), ("order", "ascending")])
    buckets = shard["bucket"].to_numpy()
    orders = shard["order"].to_numpy()
    starts = np.r_[True, buckets[1:] != buckets[:-1]] if len(buckets) else np.zeros(0, bool)
    first = np.maximum.accumulate(np.where(starts, np.arange(len(buckets)), 0)) if len(buckets) else np.zeros(0, int)
    sources, targets = [orders[~starts]], [orders[first[~starts]]]
    for step in range(1, BUCKET_WINDOW + 1):
        j = np.arange(step, len(buckets))
        same = (buckets[j] == buckets[j - step]) & (j - step > first[j])  # the first member is linked already
        sources.append(orders[j[same]])
        targets.append(orders[j[same] - step])
    pairs = (
        np.unique(np.stack([np.concatenate(sources), np.concatenate(targets)], axis=1), axis=0)
        if len(buckets)
        else np.zeros((0, 2), np.int64)
    )
    return pa.table({"order": pa.array(pairs[:, 0], pa.int64()), "linked_to": pa.array(pairs[:, 1], pa.int64())})


@numba.njit(cache=True, nogil=True)
def union_edges(parent: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """Join the components of a[i] and b[i] for every i, in place, over dense ids 0..n-1.

    A root is always linked under the smaller root, so each component's root is its smallest id, whatever
    the order the edges come in: the survivor does not depend on how edges were split or sorted.
    """
    for i in range(len(a)):
        x, y = a[i], b[i]
        while parent[x] != x:  # path halving keeps the trees shallow
            parent[x] = parent[parent[x]]
            x = parent[x]
        while parent[y] != y:
            parent[y] = parent[parent[y]]
            y = parent[y]
        if x < y:
            parent[y] = x
        elif y < x:
            parent[x] = y


@numba.njit(cache=True, nogil=True)
def resolve_roots(parent: np.ndarray) -> None:
    """Point every id straight at its root, in place. parent[i] <= i, so one pass in id order does it."""
    for i in range(len(parent)):
        parent[i] = parent[parent[i]]


@numba.njit(cache=True, nogil=True)
def pair_jaccards(flat: np.ndarray, starts: np.ndarray, ends: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact Jaccard of pairs of sorted unique sets: set i is flat[starts[i]:ends[i]], pair p is (a[p], b[p])."""
    out = np.empty(len(a), dtype=np.float64)
    for p in range(len(a)):
        i, i_end = starts[a[p]], ends[a[p]]
        j, j_end = starts[b[p]], ends[b[p]]
        size = (i_end - i) + (j_end - j)
        common = 0
        while i < i_end and j < j_end:
            if flat[i] == flat[j]:
                common += 1
                i += 1
                j += 1
            elif flat[i] < flat[j]:
                i += 1
            else:
                j += 1
        out[p] = 1.0 if size == 0 else common / (size - common)
    return out


@numba.njit(cache=True, nogil=True)
def pair_agreements(signatures: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Estimated Jaccard of pairs: the share of equal signature values of rows a[p] and b[p]."""
    out = np.empty(len(a), dtype=np.float64)
    k = signatures.shape[1]
    for p in range(len(a)):
        equal = 0
        for column in range(k):
            equal += signatures[a[p], column] == signatures[b[p], column]
        out[p] = equal / k
    return out


def components(sources: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Connected components of a small graph with edges (sources[i], targets[i]) over int64 ids.

    Returns (members, roots): every id on an edge that is not the smallest id of its component, and that
    smallest id, which is the survivor. (The belt streams edges through `union_edges` instead.)
    """
    nodes, inverse = np.unique(np.concatenate([sources, targets]), return_inverse=True)
    parent = np.arange(len(nodes), dtype=np.int64)
    union_edges(parent, inverse[: len(sources)].astype(np.int64), inverse[len(sources) :].astype(np.int64))
    resolve_roots(parent)
    members = np.flatnonzero(parent != np.arange(len(nodes)))
    return nodes[members], nodes[parent[members]]
