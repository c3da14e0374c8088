"""Paragraph dedup's pieces, free of any engine (pipeline/passes/paragraphs.py runs them): a document's paragraphs
(its lines, as dolma's and DCLM's paragraph dedup take them) hashed into units, the set of units seen so far
(a Bloom filter or an exact set), and the verdict on each unit: seen before, in the fixed order of documents.

Exact mode: a unit is a whole paragraph. Its words are split on ASCII whitespace and every Unicode space (as
exact and near dedup's normalize does; format characters such as zero-width spaces are dropped) and joined by
one space before hashing, so a paragraph that differs only in its spacing is the same paragraph, and a line of
spaces (non-breaking ones included) has no words: it is no paragraph.

`ngram` mode is DCLM's BFF (bff_units, resolve): a paragraph's tokens are its Unicode word bounds (the
unicode-segmentation crate's split_word_bounds, as BFF calls it) that are not all White_Space, punctuation
included, case kept; its units are its runs of `ngram` tokens, or, with fewer tokens but at least
`min_ngram`, one unit of all of them; a paragraph of fewer than `min_ngram` tokens has none and is never
removed. A paragraph goes when more than `threshold` of its units were inserted before, and only the units of
the paragraphs kept are inserted.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pyarrow as pa
from unicode_segmentation_rs import split_word_bounds

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
def _units_kernel(data, offsets, char_class, fill, line_doc, line_para, line_units, unit_line, unit_hash):
    """Counts (fill False) or lists (fill True) the lines with words and their one unit each. A line is the
    bytes between two "\\n"; `para` numbers every line of a document, blank ones too, as str.split("\\n")."""
    n_lines = 0
    n_units = 0
    for doc in range(len(offsets) - 1):
        end = offsets[doc + 1]
        para = 0
        words = 0
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
                whole = (whole ^ np.uint64(32)) * _FNV_PRIME
                words += 1
                word = _FNV_OFFSET
                in_word = False
            if byte == 10:  # a line ends
                if words:  # the whole paragraph is its one unit
                    if fill:
                        unit_line[n_units] = n_lines
                        unit_hash[n_units] = _mix64(whole)
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
                whole = _FNV_OFFSET
    return n_lines, n_units


def units(texts: pa.Array) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The paragraphs with words of each text and their one unit each (exact mode): ({doc, para, units} per
    paragraph, {line, hash} per unit, `line` indexing the paragraphs), in text order."""
    data, offsets = _string_bytes(texts)
    none = np.zeros(0, np.int32)
    n_lines, n_units = _units_kernel(data, offsets, _CHAR_CLASS, False, none, none, none, none, np.zeros(0, np.uint64))
    lines = {
        "doc": np.zeros(n_lines, np.int32),  # int32: a batch of documents (pipeline/passes/paragraphs.py) is bounded
        "para": np.zeros(n_lines, np.int32),
        "units": np.zeros(n_lines, np.int32),
    }
    found = {"line": np.zeros(n_units, np.int32), "hash": np.zeros(n_units, np.uint64)}
    _units_kernel(
        data,
        offsets,
        _CHAR_CLASS,
        True,
        lines["doc"],
        lines["para"],
        lines["units"],
        found["line"],
        found["hash"],
    )
    return lines, found


WHOLE_DOCUMENT = -1  # the `para` of a unit or verdict that is the whole document (BFF's remove_type document)


def bff_units(
    texts: pa.Array, ngram: int, min_ngram: int, whole_document: bool = False
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """BFF's units of each text, as units() gives them: ({doc, para, units} per paragraph with units, {line,
    hash} per unit). Each text is cut at its Unicode word bounds by the crate BFF uses (a Python list of its
    pieces' lengths a text, dropped before the next); with `whole_document` the text is one paragraph
    (para WHOLE_DOCUMENT) whose n-grams run across its lines."""
    data, offsets = _string_bytes(texts)
    lengths = []  # code points of each piece, text after text
    first_piece = np.zeros(len(offsets), np.int64)
    for i, text in enumerate(texts):
        cut = split_word_bounds(text.as_py() or "")
        lengths.append(np.fromiter(map(len, cut), np.int64, len(cut)))
        first_piece[i + 1] = first_piece[i] + len(cut)
    pieces = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
    del lengths
    none = np.zeros(0, np.int32)
    args = (data, offsets, first_piece, pieces, _CHAR_CLASS, ngram, min_ngram, whole_document)
    n_lines, n_units = _bff_kernel(*args, False, none, none, none, none, np.zeros(0, np.uint64))
    lines = {
        "doc": np.zeros(n_lines, np.int32),
        "para": np.zeros(n_lines, np.int32),
        "units": np.zeros(n_lines, np.int32),
    }
    found = {"line": np.zeros(n_units, np.int32), "hash": np.zeros(n_units, np.uint64)}
    _bff_kernel(*args, True, lines["doc"], lines["para"], lines["units"], found["line"], found["hash"])
    return lines, found


@numba.njit(cache=True, nogil=True)
def _bff_kernel(
    data,
    offsets,
    first_piece,
    pieces,
    char_class,
    ngram,
    min_ngram,
    whole,
    fill,
    line_doc,
    line_para,
    line_units,
    unit_line,
    unit_hash,
):
    """Counts (fill False) or lists (fill True) the paragraphs with units and their units, walking each text's
    word-bound pieces: a piece of White_Space only is no token, and each "\\n" in one ends a paragraph (as BFF
    splits at every "\\n"), unless `whole`."""
    n_lines = 0
    n_units = 0
    ring = np.zeros(ngram, dtype=np.uint64)
    top_power = np.uint64(1)  # _ROLL ** (ngram - 1): the weight of the token leaving the window
    for _ in range(ngram - 1):
        top_power *= _ROLL
    for doc in range(len(offsets) - 1):
        i, end = offsets[doc], offsets[doc + 1]
        para = -1 if whole else 0
        tokens, units, slot, rolling = 0, 0, 0, np.uint64(0)
        for piece in range(first_piece[doc], first_piece[doc + 1] + 1):
            start, space, newlines = i, True, 0
            if piece < first_piece[doc + 1]:
                for _ in range(pieces[piece]):  # the piece's code points
                    byte = data[i]
                    size, code = 1, np.int64(byte)
                    if byte >= 0x80:
                        size, code = _decode_utf8(data, i, end)
                    newlines += byte == 10
                    if not (9 <= byte <= 13 or byte == 32 or (byte >= 0x80 and char_class[code] == _WORD_BREAK)):
                        space = False
                    i += size
            else:
                newlines = 1  # the text's end ends its last paragraph
            if not space:  # a token: its bytes hashed, then the window of the last `ngram` tokens rolled on
                word = _FNV_OFFSET
                for k in range(start, i):
                    word = (word ^ np.uint64(data[k])) * _FNV_PRIME
                hashed = _mix64(word)
                if tokens >= ngram:
                    rolling -= ring[slot] * top_power
                rolling = rolling * _ROLL + hashed
                ring[slot] = hashed
                slot = slot + 1 if slot + 1 < ngram else 0
                tokens += 1
                if tokens >= ngram:
                    if fill:
                        unit_line[n_units] = n_lines
                        unit_hash[n_units] = _mix64(rolling)
                    n_units += 1
                    units += 1
                continue
            ends = newlines if not whole or piece == first_piece[doc + 1] else 0
            for _ in range(ends):  # a paragraph ends: a short one of at least min_ngram tokens is one unit
                if units == 0 and tokens >= min_ngram and tokens > 0:
                    if fill:
                        unit_line[n_units] = n_lines
                        unit_hash[n_units] = _mix64(rolling ^ (np.uint64(tokens) * _FNV_PRIME))  # its length too
                    n_units += 1
                    units += 1
                if units:
                    if fill:
                        line_doc[n_lines] = doc
                        line_para[n_lines] = para
                        line_units[n_lines] = units
                    n_lines += 1
                para += 0 if whole else 1
                tokens, units, slot, rolling = 0, 0, 0, np.uint64(0)
    return n_lines, n_units


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


def resolve(
    units: np.ndarray, bounds: np.ndarray, ids: np.ndarray, inserted: np.ndarray, threshold: float
) -> tuple[np.ndarray, np.ndarray]:
    """BFF's verdicts on paragraphs in document order: paragraph i has units[i] units, of which those that
    recur elsewhere are ids[bounds[i]:bounds[i + 1]] (dense ids of repeated units; a unit that never recurs
    can never be found inserted). A paragraph goes when more than `threshold` of its units are `inserted`
    (by an earlier kept paragraph); a kept one's units are then inserted. Returns (removed, contained)."""
    removed = np.zeros(len(units), np.bool_)
    contained = np.zeros(len(units), np.int64)
    _resolve_kernel(units, bounds, ids, inserted, threshold, removed, contained)
    return removed, contained


@numba.njit(cache=True, nogil=True)
def _resolve_kernel(units, bounds, ids, inserted, threshold, removed, contained):
    for i in range(len(units)):
        found = 0
        for k in range(bounds[i], bounds[i + 1]):  # all asked before any is inserted, as BFF does
            found += inserted[ids[k]]
        contained[i] = found
        if units[i] > 0 and found / units[i] > threshold:  # strictly over, as `> filtering_threshold`
            removed[i] = True
        else:
            for k in range(bounds[i], bounds[i + 1]):
                inserted[ids[k]] = 1
