"""Gopher heuristic quality and repetition rules (Rae et al. 2021, Table A1).

Each function returns the names of the rules a text breaks (empty list: the text passes), so a verdict
says every reason at once instead of only the first. The stages turn that list into a reject code.
"""
from __future__ import annotations

import re
import string
from collections import Counter

import pyarrow as pa

from .ledger import run_on_alive

GOPHER_STOP_WORDS = frozenset({"the", "be", "to", "of", "and", "that", "have", "with"})
_BULLETS = ("-", "*", "•")
_ELLIPSES = ("...", "…")
_PUNCTUATION = string.punctuation + "“”‘’«»…"


def gopher_quality_rules(
    text: str,
    *,
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
    """Names of the Gopher quality rules `text` breaks, in the order of crawl_sample.md's table."""
    text = text or ""
    words = text.split()
    lines = [line for line in text.splitlines() if line.strip()]
    n_words = len(words)
    broken = []

    if n_words < min_words:
        broken.append("too_short")
    if n_words > max_words:
        broken.append("too_long")
    # The ratio rules say nothing about a text without words (too_short already rejects it).
    if n_words:
        mean_length = sum(map(len, words)) / n_words
        if not min_mean_word_length <= mean_length <= max_mean_word_length:
            broken.append("odd_word_length")
        symbols = text.count("#") + sum(text.count(e) for e in _ELLIPSES)
        if symbols / n_words > max_symbol_word_ratio:
            broken.append("too_many_symbols")
    if lines:
        if sum(line.lstrip().startswith(_BULLETS) for line in lines) / len(lines) > max_bullet_lines_ratio:
            broken.append("mostly_bullets")
        if sum(line.rstrip().endswith(_ELLIPSES) for line in lines) / len(lines) > max_ellipsis_lines_ratio:
            broken.append("mostly_ellipsis")
    if n_words and sum(any(c.isalpha() for c in w) for w in words) / n_words < min_alpha_words_ratio:
        broken.append("too_few_alphabetic_words")
    # Surrounding punctuation is stripped so that "the," or "(with" still count as stop words.
    present = {w.lower().strip(_PUNCTUATION) for w in words} & GOPHER_STOP_WORDS
    if len(present) < min_stop_words:
        broken.append("missing_stop_words")
    return broken


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


def _ngrams(words: list[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]


def _top_ngram_char_fraction(words: list[str], n: int, total_chars: int) -> float:
    """Characters covered by the most frequent n-gram (all its occurrences) / all word characters.

    An n-gram that occurs once is not repetition, so it counts as 0 (datatrove counts it, which flags
    short texts like a two-word title for no reason).
    """
    counts = Counter(_ngrams(words, n))
    if not counts:
        return 0.0
    gram, count = counts.most_common(1)[0]
    if count < 2:
        return 0.0
    return count * sum(map(len, gram)) / total_chars


def _dup_ngram_char_fraction(words: list[str], n: int, total_chars: int) -> float:
    """Characters in words covered by a repeat of an earlier n-gram / all word characters.

    Words are marked, not n-grams summed, so overlapping duplicated n-grams count each character once;
    the first occurrence of an n-gram is not a duplicate (as in datatrove).
    """
    seen: set[tuple[str, ...]] = set()
    covered = [False] * len(words)
    for i, gram in enumerate(_ngrams(words, n)):
        if gram in seen:
            covered[i : i + n] = [True] * n
        else:
            seen.add(gram)
    return sum(len(w) for w, c in zip(words, covered) if c) / total_chars


def gopher_repetition_rules(
    text: str,
    *,
    dup_para_frac=0.30,
    dup_para_char_frac=0.20,
    dup_line_frac=0.30,
    dup_line_char_frac=0.20,
    top_ngram_char_fracs=((2, 0.20), (3, 0.18), (4, 0.16)),
    dup_ngram_char_fracs=((5, 0.15), (6, 0.14), (7, 0.13), (8, 0.12), (9, 0.11), (10, 0.10)),
) -> list[str]:
    """Names of the Gopher repetition rules `text` breaks.

    Paragraphs are split on blank lines, lines on newlines (blank ones dropped); character fractions
    are over the characters of the paragraphs, lines or words themselves, so whitespace does not count.
    Words are whitespace-separated tokens.
    """
    text = (text or "").strip()
    if not text:
        return []
    broken = []

    paragraphs = [p for p in re.split(r"\n\s*\n+", text) if p.strip()]
    count_frac, char_frac = _duplicates(paragraphs)
    if count_frac > dup_para_frac:
        broken.append("dup_para_frac")
    if char_frac > dup_para_char_frac:
        broken.append("dup_para_char_frac")

    lines = [line for line in re.split(r"\n+", text) if line.strip()]
    count_frac, char_frac = _duplicates(lines)
    if count_frac > dup_line_frac:
        broken.append("dup_line_frac")
    if char_frac > dup_line_char_frac:
        broken.append("dup_line_char_frac")

    words = text.split()
    total_chars = sum(map(len, words))
    for n, limit in top_ngram_char_fracs:
        if _top_ngram_char_fraction(words, n, total_chars) > limit:
            broken.append(f"top_{n}_gram")
    for n, limit in dup_ngram_char_fracs:
        if _dup_ngram_char_fraction(words, n, total_chars) > limit:
            broken.append(f"dup_{n}_gram")
    return broken


# --- stages -----------------------------------------------------------------------------------

class _RuleStage:
    """Rejects alive rows whose text breaks any rule, with code `<name>:<rule>,<rule>`."""

    name: str
    rules: staticmethod  # the rule function, set by each subclass

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.rules(" ", **kwargs)  # fail now, not in a worker, on a misspelt keyword

    def __call__(self, batch: pa.Table) -> pa.Table:
        return run_on_alive(batch, self.name, self._compute, {})

    def _compute(self, alive: pa.Table):
        reasons = []
        for text in alive["text"].to_pylist():
            broken = self.rules(text or "", **self.kwargs)
            reasons.append(f"{self.name}:{','.join(broken)}" if broken else None)
        return {}, reasons, None


class GopherQuality(_RuleStage):
    name = "quality"
    rules = staticmethod(gopher_quality_rules)


class GopherRepetition(_RuleStage):
    name = "repetition"
    rules = staticmethod(gopher_repetition_rules)
