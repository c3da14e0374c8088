"""A fastText model file (.bin or .ftz) checked against its own size before fastText's C++ loads it.

fastText's loader believes the file: a dictionary word that never ends reads the end of the file for ever
(growing by tens of MB a second), and a matrix header is allocated as declared before its bytes are read. So
every model the belt loads is first walked here, in the order fastText reads it (src/fasttext.cc loadModel,
args.cc, dictionary.cc, densematrix.cc, quantmatrix.cc, productquantizer.cc): each count and shape must fit in
the bytes left, agree with the rest of the model, and stay under the bounds below. What passes loads in memory
about the file's size (plus fastText's fixed tables) and predicts without reading outside its arrays.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass

import numpy as np

MAGIC = 793712314  # FASTTEXT_FILEFORMAT_MAGIC_INT32
VERSIONS = (11, 12)  # fastText refuses versions above 12; 11 is the older supervised format
SUPERVISED = 3  # model_name::sup; the belt only predicts, which fastText allows only for supervised models
LOSSES = (1, 2, 3, 4)  # hs, ns, softmax, ova

# Bounds on what a model may declare (real models sit far below them: lid.176 has 7,235 words and 176 labels;
# fastText's largest published vectors, cc.*.300.bin, 2,000,000 words).
MAX_ENTRIES = 4_000_000  # vocabulary: words and labels
MAX_LABELS = 100_000  # every document is scored against every label
MAX_LABEL_BYTES = 1024  # labels are returned with every prediction and named in messages
MAX_NGRAMS = 16  # wordNgrams and maxn: each document's n-grams cost this many times its tokens
MAX_SUBWORDS = 250_000_000  # character n-gram ids fastText precomputes for the vocabulary (4 bytes each)
KSUB = 256  # centroids per product-quantizer subspace (fastText's fixed 8 bits)

_ARGS = struct.Struct("<12id")  # dim ws epoch minCount neg wordNgrams loss model bucket minn maxn lrUpdateRate t
_DICTIONARY = struct.Struct("<iiiqq")  # size nwords nlabels ntokens pruneidx_size
_DENSE = struct.Struct("<qq")  # m n
_QUANT = struct.Struct("<?qqi")  # qnorm m n codesize
_PQ = struct.Struct("<iiii")  # dim nsubq dsub lastdsub
_ENTRY_TAIL = 9  # after a word's NUL: count (int64) and type (int8: 0 word, 1 label)


class FastTextFileError(ValueError):
    """The file is not a fastText model the belt may load; `reason` says why, in a few words."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path!r} is not a fastText model ({reason})")
        self.path = path
        self.reason = reason


class _Problem(Exception):
    pass


@dataclass
class _Reader:
    """Reads little-endian fields from the file in order, refusing any that would run past its end."""

    data: mmap.mmap | bytes
    pos: int = 0

    @property
    def left(self) -> int:
        return len(self.data) - self.pos

    def take(self, layout: struct.Struct, what: str) -> tuple:
        if layout.size > self.left:
            raise _Problem(f"it ends inside its {what}, at byte {len(self.data)}")
        values = layout.unpack_from(self.data, self.pos)
        self.pos += layout.size
        return values

    def skip(self, count: int, what: str) -> None:
        """Steps over `count` bytes that fastText will allocate and read, once they are there."""
        if count > self.left:
            raise _Problem(f"its {what} declares {count:,} bytes but only {self.left:,} are left")
        self.pos += count


def check_fasttext_file(path: str) -> None:
    """Raises FastTextFileError naming the first thing in the file fastText's loader must not believe."""
    with open(path, "rb") as f:
        if f.seek(0, 2) == 0:
            raise FastTextFileError(path, "the file is empty")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            try:
                _check(_Reader(data))
            except _Problem as problem:
                raise FastTextFileError(path, str(problem)) from None


def _check(reader: _Reader) -> None:
    magic, version = reader.take(struct.Struct("<ii"), "header")
    if magic != MAGIC or version not in VERSIONS:
        raise _Problem(f"its header is not fastText's: magic {magic}, version {version}")
    dim, _, _, _, _, word_ngrams, loss, model, bucket, minn, maxn, _, _ = reader.take(_ARGS, "settings")
    if model != SUPERVISED:
        raise _Problem(f"it is not a supervised model (model {model}), so it cannot predict labels")
    if version == 11:
        maxn = 0  # fastText ignores an old supervised model's character n-grams
    _check_settings(dim, word_ngrams, loss, bucket, minn, maxn)
    nwords, nlabels, pruned_rows = _check_dictionary(reader, minn, maxn, bucket)
    (quant_input,) = reader.take(struct.Struct("<?"), "input matrix flag")
    if pruned_rows is not None and not quant_input:
        raise _Problem("its vocabulary is pruned but its input matrix is not quantized")
    rows, cols = _check_matrix(reader, quant_input, "input matrix")
    expected_rows = nwords + bucket if pruned_rows is None else None
    if cols != dim or (expected_rows is not None and rows != expected_rows) or rows < nwords:
        raise _Problem(f"its input matrix is {rows} x {cols}, not (words + buckets) x dim = {nwords + bucket} x {dim}")
    if pruned_rows is not None and pruned_rows > rows - nwords:
        raise _Problem(f"its pruned n-grams point at row {nwords + pruned_rows - 1} of a {rows}-row input matrix")
    (quant_output,) = reader.take(struct.Struct("<?"), "output matrix flag")
    rows, cols = _check_matrix(reader, quant_input and quant_output, "output matrix")
    if (rows, cols) != (nlabels, dim):
        raise _Problem(f"its output matrix is {rows} x {cols}, not labels x dim = {nlabels} x {dim}")
    if reader.left:
        raise _Problem(f"{reader.left:,} bytes follow the model's end")


def _check_settings(dim: int, word_ngrams: int, loss: int, bucket: int, minn: int, maxn: int) -> None:
    if dim < 1:
        raise _Problem(f"its dimension is {dim}")
    if loss not in LOSSES:
        raise _Problem(f"its loss {loss} is none of fastText's")
    if not 1 <= word_ngrams <= MAX_NGRAMS or not 0 <= minn <= MAX_NGRAMS or not 0 <= maxn <= MAX_NGRAMS:
        raise _Problem(f"its n-gram lengths (wordNgrams {word_ngrams}, minn {minn}, maxn {maxn}) are not in [0, 16]")
    if bucket < 0 or (bucket == 0 and (word_ngrams > 1 or maxn > 0)):
        raise _Problem(f"it has {bucket} hash buckets for its n-grams")  # fastText would divide by zero


def _check_dictionary(reader: _Reader, minn: int, maxn: int, bucket: int) -> tuple[int, int, int | None]:
    """(words, labels, rows the pruned n-grams need past the words, or None when not pruned)."""
    size, nwords, nlabels, _, prune_size = reader.take(_DICTIONARY, "dictionary header")
    if not (0 <= nwords and 1 <= nlabels and size == nwords + nlabels):
        raise _Problem(f"its dictionary counts disagree: {size} entries, {nwords} words, {nlabels} labels")
    if size > MAX_ENTRIES or nlabels > MAX_LABELS:
        raise _Problem(
            f"its dictionary holds {nwords:,} words and {nlabels:,} labels; at most {MAX_ENTRIES:,} entries and "
            f"{MAX_LABELS:,} labels"
        )
    word_bytes = _walk_entries(reader, nwords, nlabels)
    if maxn > 0:  # each word's character n-grams, an upper bound: its bytes plus < and >, per n-gram length
        subwords = (word_bytes + 2 * nwords) * (maxn - max(minn, 1) + 1)
        if subwords > MAX_SUBWORDS:
            raise _Problem(f"its vocabulary would need {subwords:,} character n-grams; at most {MAX_SUBWORDS:,}")
    if prune_size < 0:  # -1: not pruned
        return nwords, nlabels, None
    start = reader.pos
    reader.skip(8 * prune_size, "pruned n-gram index")
    if prune_size == 0:
        return nwords, nlabels, 0
    rows = np.frombuffer(reader.data, "<i4", 2 * prune_size, start)[1::2]  # (bucket, row) pairs
    lowest, highest = int(rows.min()), int(rows.max())
    del rows  # a view of the mapped file, which closes after the check
    if lowest < 0:
        raise _Problem(f"its pruned n-gram index points at row {lowest}")
    return nwords, nlabels, highest + 1


def _walk_entries(reader: _Reader, nwords: int, nlabels: int) -> int:
    """Steps over the words then the labels, each NUL-terminated inside the file; returns the words' bytes."""
    data, pos, end = reader.data, reader.pos, len(reader.data)
    word_bytes = 0
    for i in range(nwords + nlabels):
        nul = data.find(b"\0", pos)
        if nul < 0 or nul + 1 + _ENTRY_TAIL > end:
            raise _Problem(f"its dictionary entry {i} runs past the end of the file")
        is_label = i >= nwords
        if data[nul + _ENTRY_TAIL] != is_label:  # fastText keeps the words first, then the labels
            raise _Problem(f"its dictionary entry {i} is not a {'label' if is_label else 'word'}")
        if is_label:
            if nul - pos > MAX_LABEL_BYTES:
                raise _Problem(f"its label {i - nwords} is {nul - pos:,} bytes long; at most {MAX_LABEL_BYTES:,}")
            try:
                bytes(data[pos:nul]).decode("utf-8")
            except UnicodeDecodeError:
                raise _Problem(f"its label {i - nwords} is not UTF-8") from None
        else:
            word_bytes += nul - pos
        pos = nul + 1 + _ENTRY_TAIL
    reader.pos = pos
    return word_bytes


def _check_matrix(reader: _Reader, quantized: bool, what: str) -> tuple[int, int]:
    """Steps over a dense or quantized matrix whose declared sizes fit in the bytes left; returns its shape."""
    if not quantized:
        rows, cols = reader.take(_DENSE, f"{what} header")
        if rows < 0 or cols < 0:
            raise _Problem(f"its {what} is {rows} x {cols}")
        reader.skip(4 * rows * cols, what)
        return rows, cols
    norm, rows, cols, codesize = reader.take(_QUANT, f"{what} header")
    if rows < 0 or cols < 0:
        raise _Problem(f"its {what} is {rows} x {cols}")
    subquantizers = _check_quantizer(reader, cols, f"{what}'s quantizer", after=codesize)
    if codesize != rows * subquantizers:
        raise _Problem(f"its {what} has {codesize:,} codes, not rows x subquantizers = {rows * subquantizers:,}")
    if norm:
        reader.skip(rows, f"{what}'s norm codes")
        _check_quantizer(reader, 1, f"{what}'s norm quantizer")
    return rows, cols


def _check_quantizer(reader: _Reader, dim: int, what: str, after: int = 0) -> int:
    """Steps over `after` code bytes, then a product quantizer for vectors of `dim`; returns its subquantizers."""
    if after < 0:
        raise _Problem(f"its {what} declares {after} codes")
    reader.skip(after, f"{what}'s codes")
    pq_dim, nsubq, dsub, lastdsub = reader.take(_PQ, what)
    # fastText's ProductQuantizer(dim, dsub): nsubq = ceil(dim / dsub), the last one covers what is left
    if pq_dim != dim or dsub < 1 or nsubq != -(-dim // dsub) or lastdsub != dim - (nsubq - 1) * dsub:
        raise _Problem(f"its {what} (dim {pq_dim}, {nsubq} x {dsub}, last {lastdsub}) does not fit vectors of {dim}")
    reader.skip(4 * KSUB * dim, f"{what}'s centroids")
    return nsubq
