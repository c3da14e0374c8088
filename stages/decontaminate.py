"""Decontamination: documents that hold text of an evaluation set are rejected (`contamination:NAME`) or have
that text masked, so that a model trained on the output is not tested on what it was trained on.

Both sides, eval items and documents, are compared on the same text (`match_text`): the near-dedup stage's
normalization (NFKC, case folding, whitespace collapsed; stages/dedup.normalize) with punctuation and
symbols as word breaks, as datatrove's `simplify_text` does.

Two detectors, each optional:

- n-gram overlap (GPT-3, datatrove's NGramsDecontFilter): a document is contaminated by an item when it holds
  any of the item's word n-grams (n = 13); an item shorter than n is one n-gram of all its words. N-grams are
  hashed to 64 bits by the near-dedup stage's shingle hash and looked up in one sorted array of every item's
  hashes (np.searchsorted, behind a one-hash bitmap): exact, 12 bytes per item n-gram and 2 to 4 for the
  bitmap, and it names the item (docs/benchmarks.md "Decontamination" measures it against a Bloom filter).
- near duplicate: the near-dedup stage's MinHash signatures of the items' shingles, LSH bands looked up with
  windows of each document about an item's length (a short item inside a long document has a low Jaccard with
  the document, but a high one with the window around it); a candidate is kept when most of the item's
  shingles are in the document (containment, `near_threshold`). This finds an item with a few words changed,
  which breaks every 13-gram of a short item.

The index is built lazily, once per worker process (a module-level cache keyed by the eval files and the
settings); the stage object itself stays small, so it travels to Ray or Spark workers as settings.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from backports import zstd

from .compressed import ZSTD_MAGIC
from .dedup import WHITE_SPACE, MinHasher, band_hashes, normalize, recall_bands
from .ledger import run_on_alive
from .stamps import file_stamp
from .warc_read import open_local

NAME = "contamination"
COLUMNS = {"text": pa.string(), "contamination_masked": pa.int64(), "contamination_items": pa.string()}
ACTIONS = ("reject", "mask")
SPAN_CHARS = 160  # of the matching span quoted in a reject's detail
# Near detector windows: sizes grow by this ratio, so a window is at most 1.5 times its item's length, and
# windows of one size start a third of a window apart.
WINDOW_RATIO = 1.5
WINDOW_STEPS = 3
# Items with fewer shingles are left to the n-gram detector: a near copy of a few words is not a question one
# can answer, and windows that small would mean a window (and its 64 band lookups) per shingle of every page.
NEAR_MIN_SHINGLES = 8


class EvalSetError(Exception):
    """An eval set file that cannot be read as one, in one line (config validation names the key)."""


@dataclass(frozen=True)
class EvalSet:
    name: str
    path: str
    fields: tuple[str, ...] = ("text",)
    action: str = "reject"


# --- reading eval sets --------------------------------------------------------------------------------------


def read_items(eval_set: EvalSet, opener: Callable[[str], BinaryIO] = open_local):
    """(ids, texts) of an eval set's items: JSONL (plain, gzip or zstd; a UTF-8 BOM skipped) or Parquet (by the `.parquet` name). An item's
    text is its `fields` joined by a space; its id is its `id` field where it has one, else its number in the
    file (from 0; blank JSONL lines are not items)."""
    try:
        with opener(eval_set.path) as handle:
            data = handle.read()
    except OSError as error:
        raise EvalSetError(f"cannot read {eval_set.path!r}: {error.strerror or error}") from None
    rows = _parquet_rows(eval_set, data) if eval_set.path.endswith(".parquet") else _jsonl_rows(eval_set, data)
    ids = [str(row["id"]) if row.get("id") is not None else str(i) for i, row in enumerate(rows)]
    texts = [" ".join(_field_text(row[f]) for f in eval_set.fields) for row in rows]
    return ids, texts


def _decompressed(eval_set: EvalSet, data: bytes) -> bytes:
    """The data, gunzipped or zstd-decompressed where its first bytes say so (as the readers tell them)."""
    try:
        if data[:2] == b"\x1f\x8b":
            return gzip.decompress(data)
        if data[:4] == ZSTD_MAGIC:
            return zstd.decompress(data)
    except (OSError, EOFError, zstd.ZstdError) as error:
        raise EvalSetError(f"{eval_set.path!r} is not whole compressed data ({error})") from None
    return data


def _jsonl_rows(eval_set: EvalSet, data: bytes) -> list[dict]:
    rows = []
    text = _decompressed(eval_set, data).decode("utf-8", errors="replace").removeprefix("\ufeff")  # a BOM is no text
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise EvalSetError(f"{eval_set.path!r} line {number} is not JSON") from None
        if not isinstance(row, dict):
            raise EvalSetError(f"{eval_set.path!r} line {number} is not a JSON object")
        missing = [f for f in eval_set.fields if f not in row]
        if missing:
            raise EvalSetError(f"{eval_set.path!r} line {number} has no field {missing[0]!r}")
        rows.append(row)
    return rows


def _parquet_rows(eval_set: EvalSet, data: bytes) -> list[dict]:
    try:
        schema = pq.read_schema(io.BytesIO(data))
        missing = [f for f in eval_set.fields if f not in schema.names]
        if missing:
            raise EvalSetError(f"{eval_set.path!r} has no column {missing[0]!r}")
        columns = list(eval_set.fields) + (["id"] if "id" in schema.names and "id" not in eval_set.fields else [])
        return pq.read_table(io.BytesIO(data), columns=columns).to_pylist()
    except pa.ArrowInvalid as error:
        raise EvalSetError(f"{eval_set.path!r} is not a Parquet file ({error})") from None


def _field_text(value) -> str:
    """A field's value as text: a list (answer choices) is its items joined by a space."""
    if value is None:
        return ""
    if isinstance(value, list):
        return " ".join(map(_field_text, value))
    return value if isinstance(value, str) else str(value)


# --- the text both sides are compared on ---------------------------------------------------------------------

_PUNCTUATION = r"[\p{P}\p{S}]+"  # Unicode punctuation and symbols (RE2 classes)
_WHITE = "".join(f"{re.escape(chr(first))}-{re.escape(chr(last))}" for first, last in WHITE_SPACE)
_TOKEN = re.compile(f"[^{_WHITE}]+")  # the runs normalize's word breaks (Unicode White_Space) leave


def match_text(texts) -> pa.Array:
    """Each text as decontamination compares it: stages/dedup.normalize (NFKC, case-folded, whitespace one
    space), with runs of punctuation and symbols a word break too, so that `Paris,` and `paris` are one word."""
    spaced = pc.replace_substring_regex(normalize(texts), _PUNCTUATION, " ")
    return pc.utf8_trim(pc.replace_substring_regex(spaced, " {2,}", " "), " ")


def word_counts(normalized: pa.Array) -> np.ndarray:
    """Words in each text of `match_text`'s output."""
    spaces = pc.count_substring(normalized, " ").to_numpy(zero_copy_only=False)
    return spaces + (pc.utf8_length(normalized).to_numpy(zero_copy_only=False) > 0)


def word_spans(texts: list[str]) -> list[list[tuple[int, int]]]:
    """For each text, (start, end) of each word of its match_text, in order: the whitespace-separated token
    the word comes from (a token that punctuation splits gives several words, each with the token's span).
    The tokens of all the texts go through match_text at once."""
    tokens = [[(m.start(), m.end()) for m in _TOKEN.finditer(text)] for text in texts]
    flat = [text[a:b] for text, spans in zip(texts, tokens) for a, b in spans]
    pieces = iter(match_text(flat).to_pylist() if flat else [])
    out = []
    for spans in tokens:
        words: list[tuple[int, int]] = []
        for span in spans:
            piece = next(pieces)
            words += [span] * (piece.count(" ") + 1 if piece else 0)
        out.append(words)
    return out


# --- the indexes ---------------------------------------------------------------------------------------------


@dataclass
class Hits:
    """Matches of a batch: document, first word, words and eval item of each (numpy arrays of equal length)."""

    doc: np.ndarray
    start: np.ndarray
    words: np.ndarray
    item: np.ndarray
    containment: np.ndarray  # of the item in the document, for a near hit; NaN for an n-gram hit

    @staticmethod
    def concat(parts: list[Hits]) -> Hits:
        return Hits(
            *(np.concatenate([getattr(p, f) for p in parts]) for f in ("doc", "start", "words", "item", "containment"))
        )


def _no_hits() -> Hits:
    return Hits(*(np.zeros(0, t) for t in (np.int64, np.int64, np.int64, np.int32, np.float64)))


def _positions(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(text, position in the text) of every entry of a flat array holding `counts[i]` entries of text i."""
    texts = np.repeat(np.arange(len(counts)), counts)
    return texts, np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)


def _expand(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(which query, index) for every index in [lo[q], hi[q]) of every query q."""
    sizes = hi - lo
    packed_starts = np.cumsum(sizes) - sizes
    return np.repeat(np.arange(len(lo)), sizes), np.arange(sizes.sum()) + np.repeat(lo - packed_starts, sizes)


class HashIndex:
    """Sorted 64-bit keys and the owner (eval item) of each, with a bitmap of the keys' top bits in front.

    The bitmap, 16 to 32 bits per key (a power of two), is a Bloom filter with one hash: a query whose bit is
    clear is no key, which stops about 94% of the queries that are not keys after one memory access instead of
    a binary search (docs/benchmarks.md "Decontamination": 4 times faster lookups)."""

    BITS_PER_KEY = 16

    def __init__(self, keys: np.ndarray, owners: np.ndarray):
        order = np.argsort(keys, kind="stable")
        self.keys, self.owners = keys[order], owners[order]
        bits = max(3, math.ceil(math.log2(max(1, len(keys)) * self.BITS_PER_KEY)))
        self.shift = np.uint64(64 - bits)
        self.bitmap = np.zeros(1 << (bits - 3), np.uint8)
        top = self.keys >> self.shift  # sorted, as the keys are
        byte, bit = (top >> np.uint64(3)).astype(np.int64), (np.uint8(1) << (top & np.uint64(7)).astype(np.uint8))
        if len(byte):
            starts = np.flatnonzero(np.r_[True, byte[1:] != byte[:-1]])
            self.bitmap[byte[starts]] = np.bitwise_or.reduceat(bit, starts)

    @property
    def nbytes(self) -> int:
        return self.keys.nbytes + self.owners.nbytes + self.bitmap.nbytes

    def lookup(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(query, owner) for every key equal to a query."""
        top = queries >> self.shift
        maybe = np.flatnonzero((self.bitmap[(top >> np.uint64(3)).astype(np.int64)] >> (top & np.uint64(7))) & 1)
        query, owner = search(self.keys, self.owners, queries[maybe])
        return maybe[query], owner


def search(keys: np.ndarray, owners: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(query, owner) for every key of the sorted `keys` equal to a query. The queries are searched in sorted
    order: neighbouring searches then touch neighbouring keys (5 times faster on a 6M-key index than in the
    order they come)."""
    order = np.argsort(queries)
    lo = np.empty(len(queries), np.int64)
    lo[order] = np.searchsorted(keys, queries[order])
    found = np.flatnonzero(keys[np.minimum(lo, len(keys) - 1)] == queries) if len(keys) else np.zeros(0, np.int64)
    which, index = _expand(lo[found], np.searchsorted(keys, queries[found], side="right"))
    return found[which], owners[index]


class NgramIndex:
    """Every word n-gram of every eval item, hashed to 64 bits, as one sorted array beside the item each is from.

    An item shorter than n words is one n-gram of all its words; its hash is the hash a document's run of the
    same words gets (the shingle hash does not depend on position), so documents are also hashed by each
    such shorter length that some item has."""

    def __init__(self, items: pa.Array, n: int, seed: int):
        self.hashers = {n: MinHasher(1, n, seed)}
        hashes, counts = self.hashers[n].shingle_hashes(items)
        self.index = HashIndex(hashes, np.repeat(np.arange(len(items), dtype=np.int32), counts))
        words = word_counts(items)
        for k in sorted(set(words[(words > 0) & (words < n)].tolist())):
            self.hashers[k] = MinHasher(1, k, seed)

    @property
    def nbytes(self) -> int:
        return self.index.nbytes

    def hits(self, docs: pa.Array, doc_words: np.ndarray) -> Hits:
        parts = []
        for k, hasher in self.hashers.items():
            hashes, counts = hasher.shingle_hashes(docs)
            doc, position = _positions(counts)
            query, item = self.index.lookup(hashes)
            doc = doc[query]
            words = np.minimum(k, doc_words[doc])  # a document shorter than k is one run of all its words
            parts.append(Hits(doc, position[query], words, item, np.full(len(query), np.nan)))
        return Hits.concat(parts)


class NearIndex:
    """The eval items' MinHash signatures (the near-dedup stage's), banded for LSH, and their shingle sets.

    A document is cut into windows of each size some item needs (sizes WINDOW_RATIO apart, the smallest
    that holds the item), WINDOW_STEPS windows per window length; a window's band that equals an item's makes
    the pair a candidate, kept when the share of the item's shingles found anywhere in the document
    (containment) is at least `threshold`. The bands are chosen (dedup.recall_bands) so that a window at the
    lowest Jaccard a kept item can have with its window, threshold / (1 + WINDOW_RATIO - threshold), is
    found with probability 0.98."""

    def __init__(self, items: pa.Array, hasher: MinHasher, threshold: float):
        self.hasher, self.threshold = hasher, threshold
        flat, counts = hasher.shingle_hashes(items)
        ends = np.cumsum(counts)
        starts = ends - counts
        sets = [np.unique(flat[a:b]) for a, b in zip(starts.tolist(), ends.tolist())]
        self.set_ends = np.cumsum([len(s) for s in sets], dtype=np.int64)
        self.sets = np.concatenate(sets) if sets else np.zeros(0, np.uint64)  # item i's: [ends[i-1], ends[i])
        self.bands, self.rows = recall_bands(threshold / (1 + WINDOW_RATIO - threshold), hasher.num_perm)
        has = counts >= NEAR_MIN_SHINGLES
        self.too_short = ~has  # items it does not look for (Decontaminate looks for them whole)
        buckets = band_hashes(hasher.run_signatures(flat, starts[has], ends[has]), self.bands, self.rows)
        self.index = HashIndex(buckets.ravel(), np.repeat(np.flatnonzero(has).astype(np.int32), self.bands))
        self.sizes = sorted({window_size(int(c)) for c in counts[has]})

    @property
    def nbytes(self) -> int:
        return self.index.nbytes + self.sets.nbytes + self.set_ends.nbytes

    def hits(self, docs: pa.Array, doc_words: np.ndarray) -> Hits:
        flat, counts = self.hasher.shingle_hashes(docs)
        ends = np.cumsum(counts)
        starts = ends - counts
        window_doc, window_start, window_end = self._windows(counts, starts)
        if not len(window_doc):
            return _no_hits()
        signatures = self.hasher.run_signatures(flat, window_start, window_end)
        buckets = band_hashes(signatures, self.bands, self.rows).ravel()
        query, item = self.index.lookup(buckets)
        if not len(query):
            return _no_hits()
        window = query // self.bands
        pairs = np.unique(np.stack([window_doc[window], item, window]), axis=1)  # one window per (doc, item) pair
        _, first = np.unique(pairs[:2], axis=1, return_index=True)
        found: list[tuple[int, int, int, int, float]] = []
        for d, i, w in pairs[:, first].T.tolist():
            doc_hashes = flat[starts[d] : ends[d]]
            match = self._match(doc_hashes, i, window_start[w] - starts[d], window_end[w] - starts[d])
            if match is not None:
                first_shingle, last_shingle, containment = match
                words = min(int(doc_words[d]), last_shingle + self.hasher.shingle_words) - first_shingle
                found.append((d, first_shingle, words, i, containment))
        if not found:
            return _no_hits()
        columns = zip(*found)
        return Hits(*(np.array(c, t) for c, t in zip(columns, (np.int64, np.int64, np.int64, np.int32, np.float64))))

    def _windows(self, counts: np.ndarray, starts: np.ndarray):
        """(document, first shingle, end shingle) of every window of every document, each size in turn."""
        docs, firsts, lasts = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]  # no item: none
        for size in self.sizes:
            step = max(1, size // WINDOW_STEPS)
            # windows per document: enough steps to reach its end (a last window flush with it), at least one
            per_doc = np.where(counts > size, -(-(counts - size) // step) + 1, (counts > 0).astype(np.int64))
            doc, k = _positions(per_doc)
            first = np.minimum(k * step, np.maximum(counts[doc] - size, 0))
            docs.append(doc)
            firsts.append(starts[doc] + first)
            lasts.append(starts[doc] + np.minimum(first + size, counts[doc]))
        return np.concatenate(docs), np.concatenate(firsts), np.concatenate(lasts)

    def _match(self, doc_hashes: np.ndarray, item: int, window_first: int, window_end: int):
        """(first shingle, last shingle, containment) of the item's shingles in the document, around the window
        (within one window length of it), or None below the threshold."""
        item_set = self.sets[(self.set_ends[item - 1] if item else 0) : self.set_ends[item]]
        shared = np.isin(doc_hashes, item_set)
        containment = len(np.unique(doc_hashes[shared])) / len(item_set)
        if containment < self.threshold:
            return None
        reach = window_end - window_first
        around = max(0, window_first - reach)
        near = np.flatnonzero(shared[around : window_end + reach]) + around
        near = near if len(near) else np.flatnonzero(shared)
        return int(near[0]), int(near[-1]), containment


def window_size(shingles: int) -> int:
    """The window length (in shingles) an item of this many shingles is looked for with: the smallest power of
    WINDOW_RATIO (rounded up) that holds it."""
    return math.ceil(WINDOW_RATIO ** math.ceil(math.log(shingles, WINDOW_RATIO) - 1e-9)) if shingles > 1 else 1


# --- the stage -----------------------------------------------------------------------------------------------


@dataclass
class Index:
    """The eval items of every set, and the detectors' indexes over them."""

    set_of: np.ndarray  # item -> index of its eval set
    ids: list[str]
    ngram: NgramIndex | None
    near: NearIndex | None


_INDEXES: dict[tuple, Index] = {}  # per worker process: built once, by the eval files' stamps and the settings


class Decontaminate:
    """Rejects (`contamination:NAME`) or masks the alive documents that hold text of an eval set."""

    name = NAME

    def __init__(
        self,
        eval_sets: list[EvalSet],
        *,
        ngram: int = 13,
        ngram_detector: bool = True,
        near_detector: bool = False,
        near_threshold: float = 0.5,
        placeholder: str = "[contaminated]",
        num_perm: int = 128,
        shingle_words: int = 5,
        seed: int = 1,
        opener: Callable[[str], BinaryIO] = open_local,
    ):
        self.eval_sets = list(eval_sets)
        self.ngram, self.ngram_detector = ngram, ngram_detector
        self.near_detector, self.near_threshold = near_detector, near_threshold
        self.placeholder = placeholder
        self.minhash = (num_perm, shingle_words, seed)
        self.opener = opener

    def index(self) -> Index:
        stamps = tuple(file_stamp(s.path) for s in self.eval_sets)
        settings = (self.ngram, self.ngram_detector, self.near_detector, self.near_threshold, *self.minhash)
        key = (tuple(self.eval_sets), stamps, settings)
        if key not in _INDEXES:
            _INDEXES.clear()  # one run's index at a time per worker
            _INDEXES[key] = self.build_index()
        return _INDEXES[key]

    def build_index(self) -> Index:
        set_of, ids, texts = [], [], []
        for number, eval_set in enumerate(self.eval_sets):
            set_ids, set_texts = read_items(eval_set, self.opener)
            set_of += [number] * len(set_ids)
            ids += set_ids
            texts += set_texts
        items = match_text(texts)
        num_perm, shingle_words, seed = self.minhash
        near = (
            NearIndex(items, MinHasher(num_perm, shingle_words, seed), self.near_threshold)
            if self.near_detector
            else None
        )
        ngram = NgramIndex(items, self.ngram, seed) if self.ngram_detector else None
        if ngram is None and near is not None and near.too_short.any():
            # Near detector only: an item too short for its windows (a question of five words) is looked for
            # whole, as one n-gram of all its words; the longer items are left out of this index (no text).
            short = [text if short else "" for text, short in zip(items.to_pylist(), near.too_short.tolist())]
            ngram = NgramIndex(pa.array(short, pa.string()), NEAR_MIN_SHINGLES + shingle_words, seed)
        return Index(np.array(set_of, np.int32), ids, ngram, near)

    def __call__(self, batch: pa.Table) -> pa.Table:
        return run_on_alive(batch, self.name, self._compute, COLUMNS, replaces=("text",))

    def _compute(self, alive: pa.Table):
        index = self.index()
        texts = alive["text"].to_pylist()
        docs = match_text(alive["text"])
        words = word_counts(docs)
        found = [detector.hits(docs, words) for detector in (index.ngram, index.near) if detector is not None]
        hits = Hits.concat(found)
        masked, items = [0] * len(texts), [None] * len(texts)
        reasons: list[str | None] = [None] * len(texts)
        details: list[str | None] = [None] * len(texts)
        hit_docs = np.unique(hits.doc).tolist()
        for d, spans in zip(hit_docs, word_spans([texts[d] for d in hit_docs])):
            of_doc = hits.doc == d
            found_here = (getattr(hits, f)[of_doc] for f in ("start", "words", "item", "containment"))
            texts[d], masked[d], items[d], reasons[d], details[d] = self._verdict(index, texts[d], spans, *found_here)
        columns = {"text": texts, "contamination_masked": masked, "contamination_items": items}
        return columns, reasons, details

    def _verdict(self, index: Index, text: str, spans: list[tuple[int, int]], starts, words, items, containments):
        """(text, spans masked, items masked, reason, detail) of a document with hits; `spans`: its words'."""
        sets = index.set_of[items]
        rejecting = [i for i, s in enumerate(self.eval_sets) if s.action == "reject" and (sets == i).any()]
        if rejecting:
            reason = f"{NAME}:{','.join(self.eval_sets[i].name for i in rejecting)}"
            return text, 0, None, reason, self._detail(index, text, spans, starts, words, items, containments)
        merged = _merge([_char_span(spans, int(s), int(w)) for s, w in zip(starts, words)])
        for a, b in reversed(merged):
            text = text[:a] + self.placeholder + text[b:]
        named = sorted({(int(s), index.ids[i]) for s, i in zip(sets, items)})
        masked_items = ",".join(f"{self.eval_sets[s].name}:{item_id}" for s, item_id in named)
        return text, len(merged), masked_items, None, None

    def _detail(self, index: Index, text: str, spans, starts, words, items, containments) -> str:
        """A rejected document's detail: the first item of the first rejecting set found in it, how, and all the
        words of that item's hits there (the first run of them), with how many more rejecting items it holds."""
        sets = index.set_of[items]
        rejects = np.array([self.eval_sets[s].action == "reject" for s in sets.tolist()])
        first = np.lexsort((starts, sets, ~rejects))[0]
        of_item = np.flatnonzero(items == items[first])
        span = _merge([_char_span(spans, int(starts[h]), int(words[h])) for h in of_item])[0]
        quoted = " ".join(text[span[0] : span[1]].split())
        quoted = quoted if len(quoted) <= SPAN_CHARS else quoted[:SPAN_CHARS] + "…"
        how = _how(int(words[first]), float(containments[first]), self.ngram)
        detail = f'{self.eval_sets[sets[first]].name} item {index.ids[items[first]]} ({how}): "{quoted}"'
        more = len(set(items[rejects].tolist())) - 1
        return detail + (f"; {more} more items" if more else "")


def _how(words: int, containment: float, n: int) -> str:
    """How a hit was found, for a reject's detail."""
    if not math.isnan(containment):
        return f"near copy, containment {containment:.2f}"
    return f"{n}-gram" if words == n else "the whole item"


def _char_span(spans: list[tuple[int, int]], first_word: int, words: int) -> tuple[int, int]:
    """The characters of words first_word .. first_word + words - 1 (their whole tokens)."""
    last = min(first_word + words, len(spans)) - 1
    return spans[min(first_word, last)][0], spans[last][1]


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping or touching spans as one, in order."""
    merged: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged
