"""Gopher heuristic quality and repetition rules (Rae et al. 2021, Table A1).

Each function returns the names of the rules a text breaks (empty list: the text passes), so a verdict
says every reason at once instead of only the first. The stages turn that list into a reject code.
"""

from __future__ import annotations

import re
import string
from itertools import filterfalse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import regex

from .ledger import run_on_alive
from .words import DATATROVE_PUNCTUATION as _DATATROVE_PUNCTUATION
from .words import datatrove_words

GOPHER_STOP_WORDS = frozenset({"the", "be", "to", "of", "and", "that", "have", "with"})
# The same rule for other languages: eight of each language's most frequent function words, chosen as Gopher's
# English eight are (articles, the copula, "and", the commonest prepositions and conjunctions), every one of
# them in that language's list of stopwordsiso 0.6.1 (MIT licence; tests/test_quality_languages.py checks).
# docs/design.md explains the choice and docs/benchmarks.md measures how often real pages hold them.
STOP_WORDS_BY_LANGUAGE: dict[str, frozenset[str]] = {
    "en": GOPHER_STOP_WORDS,
    "de": frozenset("der die das und ist zu von mit".split()),
    "fr": frozenset("le la les de et à que est".split()),
    "es": frozenset("el la de que y en los con".split()),
    "it": frozenset("il la di che e è per con".split()),
    "pt": frozenset("o a de que e do da em".split()),
    "nl": frozenset("de het een en van dat is met".split()),
    "pl": frozenset("i w z na się że nie jest".split()),
    "ru": frozenset("и в не на что с это как".split()),
    "el": frozenset("και το να του της η με σε".split()),
    "zh": frozenset("的 是 在 了 和 有 不 这".split()),
    "ja": frozenset("の に は を が で た と".split()),
}
# Languages written without spaces between words: each Han or kana character counts as a word (see
# _cjk_words), so the mean-word-length rule, made for words of letters, does not apply to them.
UNSPACED_LANGUAGES = frozenset({"zh", "ja"})
WORDS = ("whitespace", "datatrove")
STOP_WORDS = ("auto", "english")
_BULLETS = ("-", "*", "•")
_ELLIPSES = ("...", "…")
_PUNCTUATION = string.punctuation + "“”‘’«»…"
_FIRST_WORDS = 200  # the stop-word rule looks at these first
_CJK_WORD = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}]|[^\s\p{Han}\p{Hiragana}\p{Katakana}]+")


def gopher_quality_rules(
    text: str,
    *,
    lang: str | None = None,
    words="whitespace",
    stop_words="auto",
    min_words=50,
    max_words=100_000,
    min_mean_word_length=3,
    max_mean_word_length=10,
    max_symbol_word_ratio=0.1,
    max_bullet_lines_ratio=0.9,
    max_ellipsis_lines_ratio=0.3,
    min_alpha_words_ratio=0.8,
    min_stop_words=2,
) -> list[str]:
    """Names of the Gopher quality rules `text` breaks, in the order of crawl_sample.md's table.

    `lang`: the text's language (the language stage's `lang`); with `stop_words` auto it picks the stop-word
    list (STOP_WORDS_BY_LANGUAGE; English for any other language or none) and, for zh and ja, counts each Han
    or kana character as a word. `words`: whitespace splits words on whitespace; datatrove splits them as
    datatrove 0.10.1's Gopher filter does (stages/words.py): punctuation marks become tokens of their own,
    which count in the ratios' denominators but not as words (too_short, too_long, mean length).
    """
    if words not in WORDS:
        raise ValueError(f"unknown words {words!r}; expected one of {', '.join(WORDS)}")
    if stop_words not in STOP_WORDS:
        raise ValueError(f"unknown stop_words {stop_words!r}; expected one of {', '.join(STOP_WORDS)}")
    text = text or ""
    if stop_words == "english" or lang is None:
        lang = "en"
    stops = STOP_WORDS_BY_LANGUAGE.get(lang, GOPHER_STOP_WORDS)
    unspaced = lang in UNSPACED_LANGUAGES
    if unspaced:
        tokens = _cjk_words(text)
    elif words == "datatrove":
        tokens = datatrove_words(text)
    else:
        tokens = text.split()
    # The words that count: every token, or (datatrove) those that are not only punctuation.
    counted = [w for w in tokens if not _DATATROVE_PUNCTUATION.issuperset(w)] if words == "datatrove" else tokens
    lines = [line for line in text.splitlines() if line.strip()]
    n_words, n_tokens = len(counted), len(tokens)
    broken = []

    if n_words < min_words:
        broken.append("too_short")
    if n_words > max_words:
        broken.append("too_long")
    # The ratio rules say nothing about a text without words (too_short already rejects it).
    if n_words:
        mean_length = sum(map(len, counted)) / n_words
        if not unspaced and not min_mean_word_length <= mean_length <= max_mean_word_length:
            broken.append("odd_word_length")
        symbols = text.count("#") + sum(text.count(e) for e in _ELLIPSES)
        if symbols / n_tokens > max_symbol_word_ratio:
            broken.append("too_many_symbols")
    if lines:
        if sum(line.lstrip().startswith(_BULLETS) for line in lines) / len(lines) > max_bullet_lines_ratio:
            broken.append("mostly_bullets")
        if sum(line.rstrip().endswith(_ELLIPSES) for line in lines) / len(lines) > max_ellipsis_lines_ratio:
            broken.append("mostly_ellipsis")
    if n_words:
        # A word has a letter if it is all letters (checked in C, most words), else if any character is one.
        letterless = sum(1 for w in filterfalse(str.isalpha, tokens) if not any(map(str.isalpha, w)))
        if (n_tokens - letterless) / n_tokens < min_alpha_words_ratio:
            broken.append("too_few_alphabetic_words")
    if not _has_stop_words(tokens, stops, min_stop_words, stripped=words == "whitespace" and not unspaced):
        broken.append("missing_stop_words")
    return broken


def _has_stop_words(tokens: list[str], stops: frozenset[str], minimum: int, stripped: bool) -> bool:
    """Whether at least `minimum` of `stops` are among the text's words, in any case. `stripped`: the words are
    whitespace-split, so surrounding punctuation is stripped too ("the," and "(with" count); datatrove's
    tokens and CJK characters have none.

    Stop words are frequent, so the first words usually hold enough: they are looked at first, the whole
    text only when they do not (what the first words hold, the whole text holds too). The bare words are
    tried before the stripped ones, which cost more.
    """
    parts = (tokens[:_FIRST_WORDS], tokens) if len(tokens) > _FIRST_WORDS else (tokens,)
    for words in parts:
        lowered = [w.lower() for w in words]
        if len(stops.intersection(lowered)) >= minimum:
            return True
        if stripped and len(stops.intersection([w.strip(_PUNCTUATION) for w in lowered])) >= minimum:
            return True
    return False


def _cjk_words(text: str) -> list[str]:
    """Words of a text written without spaces: each Han or kana character, and each run of anything else
    between whitespace (Latin words, numbers, punctuation)."""
    return _CJK_WORD.findall(text)


# --- repetition -------------------------------------------------------------------------------


def _duplicates(items: list[str]) -> tuple[float, float]:
    """(fraction of items that repeat an earlier one, fraction of characters in those repeats)."""
    seen: set[str] = set()
    dup_count = dup_chars = 0
    for item in items:
        if item in seen:
            dup_count += 1
            dup_chars += len(item)
        else:
            seen.add(item)
    total_chars = sum(map(len, items))
    return dup_count / len(items), (dup_chars / total_chars if total_chars else 0.0)


def gopher_repetition_rules(text: str, **thresholds) -> list[str]:
    """Names of the Gopher repetition rules `text` breaks (see `gopher_repetition_batch`)."""
    return gopher_repetition_batch([text], **thresholds)[0]


def gopher_repetition_batch(
    texts: list[str | None] | pa.Array | pa.ChunkedArray,
    *,
    dup_para_frac=0.30,
    dup_para_char_frac=0.20,
    dup_line_frac=0.30,
    dup_line_char_frac=0.20,
    top_ngram_char_fracs=((2, 0.20), (3, 0.18), (4, 0.16)),
    dup_ngram_char_fracs=((5, 0.15), (6, 0.14), (7, 0.13), (8, 0.12), (9, 0.11), (10, 0.10)),
) -> list[list[str]]:
    """Names of the Gopher repetition rules each text breaks.

    Paragraphs are split on blank lines, lines on newlines (blank ones dropped); character fractions
    are over the characters of the paragraphs, lines or words themselves, so whitespace does not count.
    Words are whitespace-separated tokens.

    top_n_gram: the characters covered by the most frequent n-gram (all its occurrences; among equally
    frequent ones, the one that occurs first) over all word characters. An n-gram that occurs once is not
    repetition, so it counts as 0 (datatrove counts it, which flags short texts like a two-word title).
    dup_n_gram: the characters of the words covered by a repeat of an earlier n-gram over all word
    characters. Words are marked, not n-grams summed, so overlapping duplicated n-grams count each
    character once; the first occurrence of an n-gram is not a duplicate (as in datatrove).

    The n-gram rules run over the whole batch at once: n-grams are numbered by sorting, never built as
    Python tuples. `texts` may be an Arrow string column (the stage's).
    """
    if isinstance(texts, (pa.Array, pa.ChunkedArray)):
        texts = texts.to_pylist()
    texts = [(text or "").strip() for text in texts]
    # The n-gram rules split the stripped texts: Arrow's whitespace split (pyarrow 26) now and then misreads a
    # multi-byte space that ends its buffer as part of the last word, and a stripped text never ends in one.
    column = pa.array(texts, pa.large_string())
    broken: list[list[str]] = [[] for _ in texts]
    for out, text in zip(broken, texts):
        if not text:
            continue
        paragraphs = [p for p in _PARAGRAPH_BREAK.split(text) if p.strip()]
        count_frac, char_frac = _duplicates(paragraphs)
        if count_frac > dup_para_frac:
            out.append("dup_para_frac")
        if char_frac > dup_para_char_frac:
            out.append("dup_para_char_frac")
        lines = [line for line in text.split("\n") if line.strip()]  # runs of newlines leave only blanks
        count_frac, char_frac = _duplicates(lines)
        if count_frac > dup_line_frac:
            out.append("dup_line_frac")
        if char_frac > dup_line_char_frac:
            out.append("dup_line_char_frac")

    present = [i for i, text in enumerate(texts) if text]
    if present and (top_ngram_char_fracs or dup_ngram_char_fracs):
        top, dup = _ngram_fractions(
            column.take(present), {n for n, _ in top_ngram_char_fracs}, {n for n, _ in dup_ngram_char_fracs}
        )
        for row, i in enumerate(present):
            for n, limit in top_ngram_char_fracs:
                if top[n][row] > limit:
                    broken[i].append(f"top_{n}_gram")
            for n, limit in dup_ngram_char_fracs:
                if dup[n][row] > limit:
                    broken[i].append(f"dup_{n}_gram")
    return broken


_PARAGRAPH_BREAK = re.compile(r"\n\s*\n+")


def _ngram_fractions(texts: pa.Array | pa.ChunkedArray, top_sizes: set[int], dup_sizes: set[int]):
    """({n: top n-gram character fraction per text}, {n: duplicated n-gram character fraction per text})
    for texts that each hold at least one word.

    Every word gets an id unique to its text and its spelling, so n-grams of different texts never match.
    The n-grams are numbered level by level: the n-gram at word i is the pair (number of the (n-1)-gram
    at i, id of word i+n-1), numbered by np.unique. Only positions whose (n-1)-gram occurs at least twice
    are carried to level n: an n-gram that occurs twice has a prefix that does too, so every repeated
    n-gram (all its occurrences) is still there, and an n-gram left out occurs once, which neither rule
    counts. Few positions survive past the first levels, so the sorts stay small. Fractions are divisions
    of exact integers, as in a per-text count.
    """
    # Words split in C, as str.split() does (Arrow's whitespace is str.isspace's, code point for code point;
    # it leaves an empty string at each end, which is not a word). Each word's id: its spelling's index in
    # the batch's dictionary, made unique to its text by the text's number.
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    lists = pc.utf8_split_whitespace(texts)
    words = lists.flatten()
    all_lengths = pc.utf8_length(words).to_numpy()
    real = all_lengths > 0
    lengths = all_lengths[real].astype(np.int64)
    doc = np.repeat(np.arange(len(texts)), np.diff(lists.offsets.to_numpy()))[real]
    spelling = pc.dictionary_encode(words).indices.to_numpy()[real].astype(np.int64)
    _, ids, word_counts = np.unique(
        doc * (int(spelling.max(initial=0)) + 1) + spelling, return_inverse=True, return_counts=True
    )
    sizes = np.bincount(doc, minlength=len(texts)).tolist()
    n_words = len(ids)
    base = n_words  # every id is below it
    starts = np.cumsum([0] + sizes[:-1])
    total_chars = np.add.reduceat(lengths, starts).tolist()
    cumulative = np.r_[0, np.cumsum(lengths)]
    top = {n: [0.0] * len(texts) for n in top_sizes}
    dup = {n: [0.0] * len(texts) for n in dup_sizes}

    positions = np.arange(n_words)  # where the current level's n-grams start (those that may repeat)
    numbers: np.ndarray = ids  # their numbers: equal numbers, equal n-grams
    counts = word_counts[ids]  # how often each one occurs
    for n in range(1, max(top_sizes | dup_sizes, default=0) + 1):
        if n > 1:
            keep = counts >= 2
            positions, numbers = positions[keep], numbers[keep]
            keep = positions + n - 1 < n_words
            positions, numbers = positions[keep], numbers[keep]
            keep = doc[positions] == doc[positions + n - 1]
            positions, numbers = positions[keep], numbers[keep]
            if not len(positions):
                break
            keys = numbers * base + ids[positions + n - 1]
            _, first, numbers, group_counts = np.unique(
                keys, return_index=True, return_inverse=True, return_counts=True
            )
            counts = group_counts[numbers]
        elif n in top or n in dup:
            _, first, group_counts = np.unique(ids, return_index=True, return_counts=True)
        if n in top:
            # per text: the highest count, and among those the n-gram that occurs first
            repeated_g = np.flatnonzero(group_counts >= 2)  # an n-gram that occurs once counts as 0
            starts_g, counts_g = positions[first[repeated_g]], group_counts[repeated_g]
            docs_g = doc[starts_g]
            order = np.lexsort((starts_g, -counts_g, docs_g))
            best = order[np.r_[True, docs_g[order][1:] != docs_g[order][:-1]]] if len(order) else order
            values = top[n]
            for d, count, start in zip(docs_g[best].tolist(), counts_g[best].tolist(), starts_g[best].tolist()):
                values[d] = count * (int(cumulative[start + n]) - int(cumulative[start])) / total_chars[d]
        if n in dup:
            repeat = np.ones(len(positions), bool)
            repeat[first] = False  # the first occurrence of an n-gram is not a duplicate
            repeated = positions[repeat]
            if len(repeated):
                # The words covered by the intervals [start, start + n) of the repeats: the starts are in
                # order and the intervals all n long, so each interval adds its words past the previous
                # one's end (which is never in another text: an interval ends within its own text).
                ends = repeated + n
                fresh = np.maximum(repeated, np.r_[0, ends[:-1]])
                chars = cumulative[ends] - cumulative[fresh]
                covered = np.bincount(doc[repeated], weights=chars, minlength=len(texts)).tolist()
                dup[n] = [c / t for c, t in zip(covered, total_chars)]
    return top, dup


# --- stages -----------------------------------------------------------------------------------


class _RuleStage:
    """Rejects alive rows whose text breaks any rule, with code `<name>:<rule>,<rule>`."""

    name: str
    rules: staticmethod  # the rule function for one text, set by each subclass

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.rules(" ", **kwargs)  # fail now, not in a worker, on a misspelt keyword

    def __call__(self, batch: pa.Table) -> pa.Table:
        return run_on_alive(batch, self.name, self._compute, {})

    def _compute(self, alive: pa.Table):
        verdicts = self._verdicts(alive)
        return {}, [f"{self.name}:{','.join(broken)}" if broken else None for broken in verdicts], None

    def _verdicts(self, alive: pa.Table) -> list[list[str]]:
        return [self.rules(text or "", **self.kwargs) for text in alive["text"].to_pylist()]


class GopherQuality(_RuleStage):
    """The quality rules; with `stop_words` auto each row's `lang` (where the language stage ran before this
    stage) picks its stop words."""

    name = "quality"
    rules = staticmethod(gopher_quality_rules)

    def _verdicts(self, alive: pa.Table) -> list[list[str]]:
        if "lang" not in alive.column_names or self.kwargs.get("stop_words", "auto") == "english":
            return super()._verdicts(alive)
        texts, langs = alive["text"].to_pylist(), alive["lang"].to_pylist()
        return [self.rules(text or "", lang=lang, **self.kwargs) for text, lang in zip(texts, langs)]


class GopherRepetition(_RuleStage):
    name = "repetition"
    rules = staticmethod(gopher_repetition_rules)

    def _verdicts(self, alive: pa.Table) -> list[list[str]]:
        return gopher_repetition_batch(alive["text"], **self.kwargs)
