"""C4's heuristic cleaning (Raffel et al. 2020, section 2.2), as datatrove 0.10.1's C4QualityFilter does it, plus
C4's bad-words filter over a word list the user gives.

The stage both edits and rejects: lines that break a line rule are removed from the text, and a page that
breaks a page rule is rejected with every page rule it breaks named, `c4:curly_bracket,too_few_sentences`.
A kept page's text becomes its kept lines, joined by newlines (by spaces with `split_paragraph: false`, where
the "lines" are sentences). A rejected page keeps its text, so rejects/ shows what was judged.

Line rules, in datatrove's order (a line goes at the first it breaks): a word longer than `max_word_length`;
no terminal punctuation (`. ? ! " '`, not an ellipsis; checked after `[1]`, `[edit]`, `[citation needed]`
are removed); fewer than `min_words_per_line` words; "javascript" (any case); a policy phrase ("terms of
use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies", any case).
Page rules: "lorem ipsum" (any case) or a curly bracket `{` in a line that passed the first three line rules
(as datatrove looks for them only there); fewer than `min_num_sentences` sentences in the kept lines; a word
of the bad-words list in the kept text. Datatrove stops at the first page rule broken; the verdict is the
same, the code here names them all.

Sentences are counted as datatrove counts English ones (spaCy's sentencizer), without spaCy:
stages/english_split.py, on stages/words.py's tokens.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa

from .english_split import count_sentences, sentences
from .ledger import run_on_alive

CITATION = re.compile(r"\[\d*]|\[edit]|\[citation needed]")
END_PUNCTUATION = (".", "?", "!", '"', "'")
ELLIPSIS = "..."
POLICY_PHRASES = ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies")


def read_bad_words(path: str) -> list[str]:
    """The words and phrases of a bad-words file: one per line, lower-cased, blank lines skipped."""
    return [line.strip().lower() for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


# Chinese, Japanese and Thai are written without spaces between words: an entry in their scripts never has a
# word boundary around it in running text, so it is matched anywhere, as datatrove does for those languages.
UNSPACED_SCRIPT = re.compile(r"[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def bad_words_pattern(words: list[str]) -> re.Pattern:
    """C4's match (tfds c4_utils, datatrove's C4BadWordsFilter): a word or phrase of the list in the lower-cased
    text, with a non-word character or the text's edge on each side: whole words, any case ("Ass" matches
    "ass", "class" does not). An entry in Chinese, Japanese or Thai script matches anywhere."""
    spaced = [re.escape(word) for word in words if not UNSPACED_SCRIPT.search(word)]
    unspaced = [re.escape(word) for word in words if UNSPACED_SCRIPT.search(word)]
    parts = [r"(?:\W|^)(?:{})(?:\W|$)".format("|".join(spaced))] if spaced else []
    return re.compile("|".join(parts + unspaced))


def c4_clean(
    text: str,
    *,
    split_paragraph=True,
    remove_citations=True,
    filter_no_terminal_punct=True,
    min_num_sentences=5,
    min_words_per_line=3,
    max_word_length: int | None = 1000,
    filter_lorem_ipsum=True,
    filter_javascript=True,
    filter_curly_bracket=True,
    filter_policy=True,
    bad_words: re.Pattern | None = None,
) -> tuple[str, list[str]]:
    """(the page's kept text, the page rules it breaks: empty when it is kept)."""
    pieces = text.splitlines() if split_paragraph else sentences(text)
    broken: list[str] = []
    kept = []
    num_sentences = 0
    for line in pieces:
        line = line.strip()
        words = line.split()
        if max_word_length is not None and any(len(word) > max_word_length for word in words):
            continue
        if remove_citations:
            line = CITATION.sub("", line)
        if filter_no_terminal_punct and (not line.endswith(END_PUNCTUATION) or line.endswith(ELLIPSIS)):
            continue
        if len(words) < min_words_per_line:  # the words before citations were removed, as datatrove counts them
            continue
        lowered = line.lower()
        if filter_lorem_ipsum and "lorem ipsum" in lowered:
            broken.append("lorem_ipsum")
        if filter_javascript and "javascript" in lowered:
            continue
        if filter_curly_bracket and "{" in line:
            broken.append("curly_bracket")
        if filter_policy and any(phrase in lowered for phrase in POLICY_PHRASES):
            continue
        num_sentences += count_sentences(line) if split_paragraph else 1
        kept.append(line)
    kept_text = ("\n" if split_paragraph else " ").join(kept).strip()
    broken = list(dict.fromkeys(broken))  # a rule once, however many lines break it
    if num_sentences < min_num_sentences:
        broken.append("too_few_sentences")
    if bad_words is not None and bad_words.search(kept_text.lower()):
        broken.append("bad_words")
    return kept_text, broken


class C4Filter:
    """The `c4` stage: each alive row's text cleaned, or the row rejected `c4:<rule>,<rule>`."""

    name = "c4"

    def __init__(self, bad_words_file: str | None = None, **rules):
        self.rules = rules
        words = read_bad_words(bad_words_file) if bad_words_file else []
        self.bad_words = bad_words_pattern(words) if words else None
        c4_clean("", **rules)  # fail now, not in a worker, on a misspelt keyword

    def __call__(self, batch: pa.Table) -> pa.Table:
        return run_on_alive(batch, self.name, self._compute, {"text": pa.string()}, replaces=("text",))

    def _compute(self, alive: pa.Table):
        texts, reasons = [], []
        for text in alive["text"].to_pylist():
            kept, broken = c4_clean(text or "", bad_words=self.bad_words, **self.rules)
            texts.append(text if broken else kept)
            reasons.append(f"{self.name}:{','.join(broken)}" if broken else None)
        return {"text": pa.array(texts, pa.string())}, reasons, None
