"""Paragraph dedup's pieces, free of any engine (pipeline/paragraphs.py runs them): a document's paragraphs
(its lines, as dolma's and DCLM's paragraph dedup take them) hashed into units, the set of units seen so far
(a Bloom filter or an exact set), and the verdict on each unit: seen before, in the fixed order of documents.

A unit is a whole paragraph (exact paragraph dedup), or, with `ngram` n, each run of n words of a paragraph
(DCLM's BFF rule: a paragraph goes when at least a share of its n-grams was seen before; a paragraph shorter
than n words is one n-gram of all its words). Words are split on ASCII whitespace and every Unicode space (as
exact and near dedup's normalize does; format characters such as zero-width spaces are dropped) and joined by
one space before hashing, so a paragraph that differs only in its spacing is the same paragraph, and a line of
spaces (non-breaking ones included) has no words: it is no paragraph.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pyarrow as pa

from stages.dedup import (
    _CHAR_CLASS,
    _FNV_OFFSET,
    _FNV_PRIME,
    _REMOVED,
    _ROLL,
    _WORD_BREAK,
    _decode_utf8,
    _mix64,
    _string_bytes,
)


@numba.njit(cache=True, nogil=True)
def _units_kernel(data, offsets, char_class, ngram, fill, line_doc, line_para, line_units, unit_line, unit_hash):
    """Counts (fill False) or lists (fill True) the lines with words and their units. A line is the bytes
    between two "\\n"; `para` numbers every line of a document, blank ones too, as str.split("\\n") does."""
    n_lines = 0
    n_units = 0
    window = max(ngram, 1)
    ring = np.zeros(window, dtype=np.uint64)
    top_power = np.uint64(1)  # _ROLL ** (window - 1): the weight of the word leaving the window
    for _ in range(window - 1):
        top_power *= _ROLL
    for doc in range(len(offsets) - 1):
        end = offsets[doc + 1]
        para = 0
        words = 0
        slot = 0
        rolling = np.uint64(0)
        whole = _FNV_OFFSET  # the paragraph's words, one space between
        word = _FNV_OFFSET
        in_word = False
        units = 0
        i = offsets[doc]
        while i <= end:
            byte = data[i] if i < end else 10
            size, kind = 1, 0
            if byte >= 0x80:  # a Unicode space breaks words as ASCII ones do; a format character is dropped
                size, code = _decode_utf8(data, i, end)
                kind = char_class[code]
            i += size
            if kind == _REMOVED:
                continue
            if byte > 32 and kind != _WORD_BREAK:
                for k in range(i - size, i):
                    word = (word ^ np.uint64(data[k])) * _FNV_PRIME
                    whole = (whole ^ np.uint64(data[k])) * _FNV_PRIME
                in_word = True
                continue
            if in_word:  # a word ends
                hashed_word = _mix64(word)
                if ngram > 0:
                    if words >= ngram:
                        rolling -= ring[slot] * top_power  # the oldest word leaves the window
                    rolling = rolling * _ROLL + hashed_word
                    ring[slot] = hashed_word
                    slot = slot + 1 if slot + 1 < window else 0
                    if words + 1 >= ngram:
                        if fill:
                            unit_line[n_units] = n_lines
                            unit_hash[n_units] = _mix64(rolling)
                        n_units += 1
                        units += 1
                whole = (whole ^ np.uint64(32)) * _FNV_PRIME
                words += 1
                word = _FNV_OFFSET
                in_word = False
            if byte == 10:  # a line ends
                if words and (ngram == 0 or words < ngram):  # the whole paragraph is its one unit
                    if fill:
                        unit_line[n_units] = n_lines
                        unit_hash[n_units] = _mix64(whole if ngram == 0 else rolling)
                    n_units += 1
                    units += 1
                if words:
                    if fill:
                        line_doc[n_lines] = doc
                        line_para[n_lines] = para
                        line_units[n_lines] = units
                    n_lines += 1
                para += 1
                words = 0
                units = 0
                slot = 0
                rolling = np.uint64(0)
                whole = _FNV_OFFSET
    return n_lines, n_units


def units(texts: pa.Array, ngram: int = 0) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The paragraphs with words of each text and their units: ({doc, para, units} per paragraph,
    {line, hash} per unit, `line` indexing the paragraphs), in text order."""
    data, offsets = _string_bytes(texts)
    none = np.zeros(0, np.int32)
    n_lines, n_units = _units_kernel(
        data, offsets, _CHAR_CLASS, ngram, False, none, none, none, none, np.zeros(0, np.uint64)
    )
    lines = {
        "doc": np.zeros(n_lines, np.int32),  # int32: a batch of documents (pipeline/paragraphs.py) is bounded
        "para": np.zeros(n_lines, np.int32),
        "units": np.zeros(n_lines, np.int32),
    }
    found = {"line": np.zeros(n_units, np.int32), "hash": np.zeros(n_units, np.uint64)}
    _units_kernel(
        data,
        offsets,
        _CHAR_CLASS,
        ngram,
        True,
        lines["doc"],
        lines["para"],
        lines["units"],
        found["line"],
        found["hash"],
    )
    return lines, found


MAX_FILTER_BYTES = 16 << 30  # a shard's Bloom filter: refused above this (validate, or once units are counted)


def line_hashes(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each line data[start:end] stripped of spaces at both ends (ASCII and Unicode ones, as
    str.strip), to count lines removed without a Python string each."""
    out = np.zeros(len(starts), np.uint64)
    _line_hashes_kernel(data, starts, ends, _CHAR_CLASS, out)
    return out


@numba.njit(cache=True, nogil=True)
def _line_hashes_kernel(data, starts, ends, char_class, out):
    for j in range(len(starts)):
        first, last = -1, starts[j]
        i = starts[j]
        while i < ends[j]:
            byte = data[i]
            size, kind = 1, 0
            if byte >= 0x80:
                size, code = _decode_utf8(data, i, ends[j])
                kind = char_class[code]
            if byte > 32 and kind != _WORD_BREAK:
                first = i if first < 0 else first
                last = i + size
            i += size
        hashed = _FNV_OFFSET
        for k in range(max(first, 0), last if first >= 0 else 0):
            hashed = (hashed ^ np.uint64(data[k])) * _FNV_PRIME
        out[j] = _mix64(hashed)


COUNT_WORDS = 1 << 20  # the filter's words whose bits are counted at once: 1 MiB of counts


def bloom_bits(expected: float, rate: float) -> int:
    """The bits of a Bloom filter of `expected` items at a false-positive rate `rate`: m = -n ln p / (ln 2)^2,
    in whole 64-bit words."""
    return max(64, math.ceil(-max(int(expected), 1) * math.log(rate) / math.log(2) ** 2 / 64) * 64)


def filter_too_large(units: float, rate: float) -> str | None:
    """Why a shard's Bloom filter for `units` at `rate` is refused before it is allocated, or None."""
    size = bloom_bits(units, rate) / 8
    if size <= MAX_FILTER_BYTES:
        return None
    limit = MAX_FILTER_BYTES >> 30
    return f"a Bloom filter of {size / 2**30:.1f} GiB per shard, over the {limit} GiB a shard task may hold"


class BloomFilter:
    """A Bloom filter of `expected` items at a false-positive rate `rate`: bloom_bits bits and
    k = (m / n) ln 2 probes, each item's probes h1 + i * h2 from the two halves of its 64-bit hash
    (Kirsch and Mitzenmacher), as dolma's and DCLM's BFF size theirs."""

    def __init__(self, expected: int, rate: float):
        expected = max(int(expected), 1)
        self.bits = bloom_bits(expected, rate)
        self.probes = max(1, round(self.bits / expected * math.log(2)))
        self.words = np.zeros(self.bits // 64, np.uint64)

    @property
    def bytes(self) -> int:
        return self.words.nbytes

    def contains(self, hashes: np.ndarray) -> np.ndarray:
        return _bloom(self.words, hashes, self.probes, False)

    def add(self, hashes: np.ndarray) -> None:
        _bloom(self.words, hashes, self.probes, True)

    def estimated_false_positive_rate(self) -> float:
        """The chance that an item never added is reported seen, from the share of bits set now."""
        ones = 0
        for start in range(0, len(self.words), COUNT_WORDS):  # counted a chunk at a time, never a byte per bit
            ones += int(np.bitwise_count(self.words[start : start + COUNT_WORDS]).sum(dtype=np.int64))
        return (ones / self.bits) ** self.probes


@numba.njit(cache=True, nogil=True)
def _bloom(words, hashes, probes, add):
    bits = np.uint64(len(words) * 64)
    found = np.ones(len(hashes), dtype=np.bool_)
    for i in range(len(hashes)):
        h1 = hashes[i] & np.uint64(0xFFFFFFFF)
        h2 = (hashes[i] >> np.uint64(32)) | np.uint64(1)
        for probe in range(probes):
            position = (h1 + np.uint64(probe) * h2) % bits
            word, bit = position >> np.uint64(6), np.uint64(1) << (position & np.uint64(63))
            if add:
                words[word] |= bit
            elif not words[word] & bit:
                found[i] = False
                break
    return found


class ExactSet:
    """Every hash added, sorted: 8 bytes a distinct unit, no false positive."""

    def __init__(self) -> None:
        self.values = np.zeros(0, np.uint64)

    @property
    def bytes(self) -> int:
        return self.values.nbytes

    def contains(self, hashes: np.ndarray) -> np.ndarray:
        at = np.minimum(np.searchsorted(self.values, hashes), max(len(self.values) - 1, 0))
        return (self.values[at] == hashes) if len(self.values) else np.zeros(len(hashes), np.bool_)

    def add(self, hashes: np.ndarray) -> None:
        new = np.unique(hashes[~self.contains(hashes)])
        if len(new):  # two sorted runs: a stable sort (timsort) merges them in linear time
            self.values = np.concatenate([self.values, new])
            self.values.sort(kind="stable")

    def estimated_false_positive_rate(self) -> float:
        return 0.0


def seen_before(hashes: np.ndarray, keys: np.ndarray, seen: BloomFilter | ExactSet) -> np.ndarray:
    """For units in key order (a key: the paragraph's order and its number in the document, one int), whether
    each was seen in an earlier paragraph: in `seen` (the earlier batches), or earlier in this batch under a
    smaller key. A paragraph's repeated n-grams do not count against it. Then the batch's units join `seen`.
    A batch must hold whole paragraphs."""
    unique, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    earlier_in_batch = keys[first][inverse] != keys
    found = earlier_in_batch | seen.contains(hashes)
    seen.add(unique)
    return found
