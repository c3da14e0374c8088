"""Paragraph dedup's pieces, free of any engine (pipeline/paragraphs.py runs them): a document's paragraphs
(its lines, as dolma's and DCLM's paragraph dedup take them) hashed into units, the set of units seen so far
(a Bloom filter or an exact set), and the verdict on each unit: seen before, in the fixed order of documents.

A unit is a whole paragraph (exact paragraph dedup), or, with `ngram` n, each run of n words of a paragraph
(DCLM's BFF rule: a paragraph goes when at least a share of its n-grams was seen before; a paragraph shorter
than n words is one n-gram of all its words). Words are split on ASCII whitespace and joined by one space
before hashing, so a paragraph that differs only in its spacing is the same paragraph.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pyarrow as pa

from stages.dedup import _FNV_OFFSET, _FNV_PRIME, _ROLL, _mix64, _string_bytes


@numba.njit(cache=True, nogil=True)
def _units_kernel(data, offsets, ngram, fill, line_doc, line_para, line_units, unit_line, unit_hash):
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
        for i in range(offsets[doc], end + 1):
            byte = data[i] if i < end else 10
            if byte > 32:
                word = (word ^ np.uint64(byte)) * _FNV_PRIME
                whole = (whole ^ np.uint64(byte)) * _FNV_PRIME
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
    none = np.zeros(0, np.int64)
    n_lines, n_units = _units_kernel(data, offsets, ngram, False, none, none, none, none, np.zeros(0, np.uint64))
    lines = {
        "doc": np.zeros(n_lines, np.int64),
        "para": np.zeros(n_lines, np.int64),
        "units": np.zeros(n_lines, np.int64),
    }
    found = {"line": np.zeros(n_units, np.int64), "hash": np.zeros(n_units, np.uint64)}
    _units_kernel(data, offsets, ngram, True, lines["doc"], lines["para"], lines["units"], found["line"], found["hash"])
    return lines, found


class BloomFilter:
    """A Bloom filter of `expected` items at a false-positive rate `rate`: m = -n ln p / (ln 2)^2 bits and
    k = (m / n) ln 2 probes, each item's probes h1 + i * h2 from the two halves of its 64-bit hash
    (Kirsch and Mitzenmacher), as dolma's and DCLM's BFF size theirs."""

    def __init__(self, expected: int, rate: float):
        expected = max(int(expected), 1)
        self.bits = max(64, math.ceil(-expected * math.log(rate) / math.log(2) ** 2 / 64) * 64)
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
        ones = int(np.unpackbits(self.words.view(np.uint8)).sum())
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
