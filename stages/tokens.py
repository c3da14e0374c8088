"""Tokenizer and packing: train or load a Hugging Face tokenizer, encode batches of texts, cut each drawn
document into pieces of fixed-length sequences and put those pieces back together. Plain Python and
numpy; no Ray.

A source's drawn documents form one token stream, each document followed by the end-of-document token.
The stream is cut into sequences of `seq_len + 1` tokens (inputs are tokens[:-1], targets tokens[1:]),
so a document that crosses a boundary continues in the next sequence, and every token of the stream is
in exactly one sequence. What is left at the end (fewer than seq_len + 1 tokens) is dropped and counted,
or kept as one last sequence padded with the pad id, its `length` telling the real tokens apart.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from collections.abc import Iterable, Iterator

import numpy as np
import tiktoken
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

# The pre-tokenizer regex of tokenizers' ByteLevel(use_regex=True): GPT-2's.
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
PIECE_CHARS = 1 << 20  # a longer text is trained on and encoded in pieces of about this many characters
# Where GPT-2's pre-tokenizer always splits, whatever comes before: after a character that is not a space (by
# Python's \s, which holds every character the tokenizers' \s holds) and before an ASCII space, which no
# pattern joins to what precedes it. Each side then pre-tokenizes as it did in the whole, and BPE never merges
# across pre-tokens: the pieces' ids are the whole's.
_CUT = re.compile(r"(?<=\S)(?=[ \t\n\r\f\v])")


def text_pieces(text: str) -> list[str]:
    """`text` cut, every PIECE_CHARS characters or so, where GPT-2's pre-tokenizer splits anyway (one long word
    stays whole): tokenizers holds about 100 bytes a character of what it trains on or encodes at once."""
    pieces, start = [], 0
    while len(text) - start > PIECE_CHARS:
        found = _CUT.search(text, start + PIECE_CHARS)
        if found is None:
            break
        pieces.append(text[start : found.start()])
        start = found.start()
    pieces.append(text[start:])
    return pieces


def train_bpe(texts: Iterable[str | list[str]], vocab_size: int, special_tokens: list[str]) -> Tokenizer:
    """A byte-level BPE (GPT-2 style: every byte has a token, so any text encodes and decodes back exactly),
    trained on `texts`; the special tokens take the first ids, in the order given."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=special_tokens,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(_pieces(texts), trainer)  # the same words counted, a piece at a time
    return tokenizer


def _pieces(texts: Iterable[str | list[str]]) -> Iterator[str]:
    """Each text (given one by one or in lists) in text_pieces."""
    for item in texts:
        for text in [item] if isinstance(item, str) else item:
            yield from text_pieces(text)


MAX_TOKEN_ID = 2**24 - 1  # a given tokenizer's ids are checked against it (the largest real vocabularies: ~260k)


def token_dtype(id_limit: int) -> np.dtype:
    """The shards' ids: uint16 where every id (below `id_limit`) fits, else uint32."""
    return np.dtype(np.uint16) if id_limit <= 2**16 else np.dtype(np.uint32)


def id_limit(tokenizer: Tokenizer) -> int:
    """The largest id + 1: what the id width must hold. Not the vocabulary size: a given tokenizer's ids
    need not be contiguous (2,000 entries may run up to id 71,999)."""
    return max(tokenizer.get_vocab(with_added_tokens=True).values(), default=-1) + 1


def _byte_of_char() -> dict[str, int]:
    """GPT-2's byte-level alphabet: which byte each of its 256 printable characters stands for."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    return {chr(b): b for b in printable} | {chr(256 + i): b for i, b in enumerate(others)}


def as_tiktoken(tokenizer: Tokenizer) -> tuple[tiktoken.Encoding | None, str]:
    """The same tokenizer as a tiktoken Encoding, which encodes byte-level BPE several times faster, or None
    and the reason it might not give the same ids.

    The two algorithms differ: tokenizers merges only the listed pairs, first listed first; tiktoken merges
    any two neighbours whose bytes together are a token, lowest id first, and takes a pre-tokenized word that
    is a token whole. They give the same ids when the pre-tokenizer is GPT-2's byte-level one with nothing
    before it, ids rise with the merge order, each merge's parts exist before it, and every token encodes
    to itself alone: then two neighbours that tiktoken would join although tokenizers does not cannot arise,
    since they would arise the same way inside the token they spell, which would then not encode to itself.
    """
    spec = json.loads(tokenizer.to_str())
    model, pre = spec.get("model") or {}, spec.get("pre_tokenizer") or {}
    if spec.get("normalizer") is not None:
        return None, "it has a normalizer"
    if pre.get("type") != "ByteLevel" or pre.get("add_prefix_space") or not pre.get("use_regex", True):
        return None, "its pre-tokenizer is not GPT-2's byte-level one"
    if (
        model.get("type") != "BPE"
        or model.get("dropout")
        or model.get("continuing_subword_prefix")
        or model.get("end_of_word_suffix")
        or model.get("byte_fallback")
    ):
        return None, "its model is not a plain BPE"
    added = spec.get("added_tokens") or []
    if not all(t["special"] for t in added):
        return None, "it has added tokens that are not special"
    byte_of = _byte_of_char()
    vocab = {token: i for token, i in model["vocab"].items() if token not in {t["content"] for t in added}}
    if not all(c in byte_of for token in vocab for c in token) or not all(c in vocab for c in byte_of):
        return None, "its vocabulary is not byte-level"
    made_at: dict[str, int] = {}  # token -> the rank of the merge that makes it
    for rank, merge in enumerate(model["merges"]):
        left, right = merge.split(" ") if isinstance(merge, str) else merge
        if left + right in made_at:
            return None, f"two merges make {left + right!r}"
        if left + right not in vocab or made_at.get(left, -1) >= rank or made_at.get(right, -1) >= rank:
            return None, "its merges do not build on one another in order"
        made_at[left + right] = rank
    ranked = sorted(made_at, key=made_at.__getitem__)
    if any(vocab[a] >= vocab[b] for a, b in zip(ranked, ranked[1:])):
        return None, "its ids do not rise with the merge order"
    bpe = tokenizer.model
    for token, i in vocab.items():
        if len(token) > 1 and [t.id for t in bpe.tokenize(token)] != [i]:
            return None, f"the token {token!r} does not encode to itself"
    ranks = {bytes(byte_of[c] for c in token): i for token, i in vocab.items()}
    return tiktoken.Encoding("crawlbelt", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={}), "exact"


def gpt2_pre_tokenizer(tokenizer: Tokenizer) -> bool:
    """Whether `tokenizer` splits text first by GPT-2's byte-level pre-tokenizer alone, with nothing before it
    and no added token holding a space: then a text may be encoded in text_pieces."""
    spec = json.loads(tokenizer.to_str())
    pre = spec.get("pre_tokenizer") or {}
    spaced = any(re.search(r"\s", t["content"]) for t in spec.get("added_tokens") or [])
    return (
        spec.get("normalizer") is None
        and pre.get("type") == "ByteLevel"
        and not pre.get("add_prefix_space")
        and pre.get("use_regex", True)
        and not spaced
    )


class DocumentEncoder:
    """Encodes batches of document texts to ids, adding no special tokens: packing places the end tokens.

    A special token's text written inside a page (a forum post quoting "<|endoftext|>", or "<|ENDOFTEXT|>"
    under a lowercasing normalizer) is encoded as plain text, never as the special token: tiktoken never
    matches special tokens; tokenizers encodes a batch again with special-token matching off when its ids
    hold a special token's id (matching off costs about 15%, and a matched special token always shows as
    its id, so only batches that need it pay). A given tokenizer's `truncation` and `padding` settings are
    cleared (listed in `cleared`): a document is encoded whole and packing places every pad.
    `engine`: "auto" encodes with tiktoken where as_tiktoken finds it exact, else with tokenizers;
    "tokenizers" always with tokenizers.
    """

    def __init__(self, tokenizer_json: str, engine: str = "auto"):
        self.plain = Tokenizer.from_str(tokenizer_json)
        self.cleared = [name for name in ("truncation", "padding") if getattr(self.plain, name) is not None]
        self.plain.no_truncation()
        self.plain.no_padding()
        self.literal = Tokenizer.from_str(self.plain.to_str())
        self.literal.encode_special_tokens = True
        self.special_ids = np.array(sorted(i for i, t in self.plain.get_added_tokens_decoder().items() if t.special))
        self.dtype = token_dtype(id_limit(self.plain))
        self.fast, why = as_tiktoken(self.plain) if engine == "auto" else (None, "tokenizers chosen")
        self.engine = "tiktoken" if self.fast else f"tokenizers ({why})"
        self.cuttable = gpt2_pre_tokenizer(self.plain)

    def __call__(self, texts: list[str | None]) -> tuple[np.ndarray, np.ndarray]:
        """(tokens per text, all ids concatenated); a missing text counts as empty. With GPT-2's
        pre-tokenizer, a long text is encoded in pieces (text_pieces), PIECE_CHARS of them at a time."""
        strings = [t or "" for t in texts]
        if not self.cuttable or all(len(t) <= PIECE_CHARS for t in strings):
            return self._encode(strings)
        pieces = [text_pieces(t) for t in strings]
        flat = list(itertools.chain.from_iterable(pieces))
        sizes = np.cumsum([len(p) for p in flat])
        groups = np.searchsorted(sizes, np.arange(PIECE_CHARS, sizes[-1], PIECE_CHARS), "right")
        parts = [self._encode(flat[a:b]) for a, b in zip([0, *groups], [*groups, len(flat)]) if b > a]
        lengths = np.concatenate([p[0] for p in parts])
        firsts = np.cumsum([0] + [len(p) for p in pieces[:-1]])
        return np.add.reduceat(lengths, firsts), np.concatenate([p[1] for p in parts])

    def _encode(self, strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
        if self.fast:
            return self._flat([self.fast.encode_ordinary(t) for t in strings])
        lengths, values = self._flat([e.ids for e in self.plain.encode_batch_fast(strings, add_special_tokens=False)])
        if np.isin(values, self.special_ids).any():
            return self._flat([e.ids for e in self.literal.encode_batch_fast(strings, add_special_tokens=False)])
        return lengths, values

    def _flat(self, ids: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        lengths = np.fromiter(map(len, ids), np.int64, count=len(ids))
        values = np.fromiter(itertools.chain.from_iterable(ids), self.dtype, count=int(lengths.sum()))
        return lengths, values


@dataclass
class StreamLayout:
    """How one source's stream of drawn documents falls into sequences."""

    starts: np.ndarray  # where each drawn document (end token included) starts in the stream
    tokens: int  # tokens in the stream
    sequences: int
    dropped: int  # remainder tokens dropped (remainder: drop)
    padding: int  # pad positions in the last sequence (remainder: pad)


def stream_layout(lengths: np.ndarray, seq_tokens: int, pad: bool) -> StreamLayout:
    """`lengths`: tokens of each drawn document in stream order, its end token included."""
    lengths = np.asarray(lengths, dtype=np.int64)
    ends = np.cumsum(lengths)
    total = int(ends[-1]) if len(ends) else 0
    full, rest = divmod(total, seq_tokens)
    padded = pad and rest > 0
    return StreamLayout(
        starts=ends - lengths,
        tokens=total,
        sequences=full + int(padded),
        dropped=0 if pad else rest,
        padding=seq_tokens - rest if padded else 0,
    )


def cut(document: np.ndarray, start: int, seq_tokens: int, sequences: int) -> Iterator[tuple[int, int, np.ndarray]]:
    """(sequence number, offset in that sequence, tokens) for each piece of a document (end token
    included) that starts at `start` in its stream; pieces past the last sequence are dropped."""
    end = start + len(document)
    last = min((end - 1) // seq_tokens, sequences - 1)
    for k in range(start // seq_tokens, last + 1):
        a, b = max(start, k * seq_tokens), min(end, (k + 1) * seq_tokens)
        yield k, a - k * seq_tokens, document[a - start : b - start]


def assemble(
    positions: np.ndarray,
    offsets: np.ndarray,
    piece_lengths: np.ndarray,
    values: np.ndarray,
    seq_tokens: int,
    fill: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sequences from their pieces, given sorted by (position, offset) with `values` concatenated in that
    order: (the index of each sequence's first piece, a (sequences, seq_tokens) matrix with `fill` after
    the real tokens, lengths).

    Raises ValueError when the pieces of a sequence do not follow each other from offset 0 without a gap
    or overlap, or a sequence is longer than seq_tokens: a piece lost or doubled on the way.
    """
    if len(positions) == 0:
        return np.empty(0, np.int64), np.empty((0, seq_tokens), values.dtype), np.empty(0, np.int32)
    firsts = np.flatnonzero(np.r_[True, positions[1:] != positions[:-1]])
    lengths = np.add.reduceat(piece_lengths, firsts)
    expected_offsets = (
        np.cumsum(piece_lengths)
        - piece_lengths
        - np.repeat(np.cumsum(lengths) - lengths, np.diff(np.r_[firsts, len(positions)]))
    )
    if not np.array_equal(offsets, expected_offsets) or lengths.max() > seq_tokens:
        raise ValueError("the pieces of a sequence do not fit together")
    n = len(firsts)
    if np.all(lengths == seq_tokens):
        matrix = values.reshape(n, seq_tokens)
    else:
        matrix = np.full((n, seq_tokens), fill, dtype=values.dtype)
        rows = np.repeat(np.arange(n), lengths)
        matrix[rows, np.arange(len(values)) - np.repeat(np.cumsum(lengths) - lengths, lengths)] = values
    return firsts, matrix, lengths.astype(np.int32)
