"""English sentences and words as datatrove 0.10.1 counts them, on stages/words.py's tokens, without spaCy.

datatrove splits English with `spacy.blank("en")` plus spaCy's rule-based `sentencizer` (no model, but spaCy
itself, a large dependency and slow per call). Its C4 and FineWeb filters use how many sentences a line holds,
where a text's sentences start, and how many tokens a text has. The tokens are `stages.words.chunk_tokens`'
(spaCy's English tokenizer, reimplemented); this module adds what the sentencizer does with them:

- a sentence ends at a token in the sentencizer's list (`.`, `!`, `?` and their kin in other scripts; an
  ellipsis `...` is one token and ends nothing);
- the next sentence starts at the first later token that is neither in that list nor all punctuation;
- whitespace other than one space between chunks (a newline, two spaces) is a token of its own, and no
  punctuation: after a sentence end, the next sentence starts there.

docs/benchmarks.md measures how often this and spaCy disagree on real pages.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from .words import chunk_tokens

# spacy.pipeline.sentencizer.Sentencizer.default_punct_chars (spaCy 3.8)
SENTENCE_ENDS = frozenset(
    "!.?\u0589\u061f\u06d4\u0700\u0701\u0702\u07f9\u0964\u0965\u104a\u104b\u1362\u1367\u1368\u166e\u1735\u1736"
    "\u1803\u1809\u1944\u1945\u1aa8\u1aa9\u1aaa\u1aab\u1b5a\u1b5b\u1b5e\u1b5f\u1c3b\u1c3c\u1c7e\u1c7f\u203c"
    "\u203d\u2047\u2048\u2049\u2e2e\u2e3c\ua4ff\ua60e\ua60f\ua6f3\ua6f7\ua876\ua877\ua8ce\ua8cf\ua92f\ua9c8"
    "\ua9c9\uaa5d\uaa5e\uaa5f\uaaf0\uaaf1\uabeb\ufe52\ufe56\ufe57\uff01\uff0e\uff1f\U00010a56\U00010a57"
    "\U00011047\U00011048\U000110be\U000110bf\U000110c0\U000110c1\U00011141\U00011142\U00011143\U000111c5"
    "\U000111c6\U000111cd\U000111de\U000111df\U00011238\U00011239\U0001123b\U0001123c\U000112a9\U0001144b"
    "\U0001144c\U000115c2\U000115c3\U000115c9\U000115ca\U000115cb\U000115cc\U000115cd\U000115ce\U000115cf"
    "\U000115d0\U000115d1\U000115d2\U000115d3\U000115d4\U000115d5\U000115d6\U000115d7\U00011641\U00011642"
    "\U0001173c\U0001173d\U0001173e\U00011a42\U00011a43\U00011a9b\U00011a9c\U00011c41\U00011c42\U00016a6e"
    "\U00016a6f\U00016af5\U00016b37\U00016b38\U00016b44\U0001bc9f\U0001da88\uff61\u3002"
)
_CHUNK = re.compile(r"\S+")


def _is_punct(token: str) -> bool:
    """spaCy's `is_punct`: every character is Unicode punctuation."""
    return all(unicodedata.category(char).startswith("P") for char in token)


@functools.lru_cache(maxsize=65536)
def _sentencizer_tokens(chunk: str) -> tuple[tuple[int, bool, bool], ...]:
    """(offset in `chunk`, ends a sentence, is punctuation) for each of the chunk's tokens."""
    tokens = []
    offset = 0
    for token in chunk_tokens(chunk):
        tokens.append((offset, token in SENTENCE_ENDS, _is_punct(token)))
        offset += len(token)
    return tuple(tokens)


def sentence_starts(text: str) -> list[int]:
    """The offset where each sentence of `text` starts, as the sentencizer would put it (the first is 0): at the
    first token after a sentence end that is neither a sentence end nor all punctuation."""
    starts = [0]
    after_end = False
    gap_start = 0  # where the whitespace before the chunk starts
    for match in _CHUNK.finditer(text):
        # Whitespace other than one space is a token (the first space stays with the token before it).
        if after_end and text[gap_start : match.start()] not in ("", " "):
            starts.append(gap_start + text.startswith(" ", gap_start))
            after_end = False
        start, chunk = match.start(), match.group()
        gap_start = match.end()
        if chunk.isalnum():  # most words: tokens that are neither punctuation nor a sentence end (checked in C)
            if after_end:
                starts.append(start)
                after_end = False
            continue
        for offset, ends, punct in _sentencizer_tokens(chunk):
            if after_end and not ends and not punct:
                starts.append(start + offset)
                after_end = False
            elif ends:
                after_end = True
    if after_end and text[gap_start:] not in ("", " "):  # trailing whitespace: a sentence of its own
        starts.append(gap_start + text.startswith(" ", gap_start))
    return starts


def sentences(text: str) -> list[str]:
    """`text` cut where each sentence starts (datatrove's split_into_sentences, whose pieces are then stripped)."""
    starts = sentence_starts(text)
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]


def count_sentences(text: str) -> int:
    return len(sentence_starts(text))


def count_words(text: str) -> int:
    """How many non-space tokens spaCy's blank English tokenizer makes of `text` (datatrove's split_into_words)."""
    return sum(len(chunk_tokens(chunk)) for chunk in text.split())
