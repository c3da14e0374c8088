"""A line-by-line Python port of DCLM's BFF paragraph dedup, to check crawlbelt's `ngram` mode against.

Ported from mlfoundations/dclm, dedup/bff/src/main.rs at commit 6f035855ba00cf536180a661bad204b007d6997a
(unchanged up to 361714bdd60bb9b7f4b2d8354cebbf0dec0c329e, 2025-09-08): `not_whitespace` and `tokenize`
(lines 196-208), `process_line` (791-898, remove types paragraph and document) and `process_line_oldboth`
(1206-1314, remove type old-both, the one DCLM's dedup/bff/README.md runs). Each Rust statement is kept in
order, with the Rust in a comment where Python reads differently.

One stand-in: BFF's Bloom filter (`hashes`, `contains_hashes`, `insert_hashes`) is an exact set of the
n-grams themselves (tuples of their tokens), so this port has no false positive; crawlbelt's exact set (64-bit
hashes of the n-grams) is compared with it. A Bloom filter at DCLM's `--fp-rate 0.01` would also remove, now
and then, a paragraph never seen: no comparison of two Bloom filters could be exact.

The tokenizer is the crate BFF calls, unicode-segmentation's `split_word_bounds`, through its Python binding
(unicode-segmentation-rs; the crate's 1.13.3 there, 1.11.0 in DCLM's Cargo.lock: their Unicode versions differ
only for characters whose Word_Break property changed between them).
"""

from __future__ import annotations

from collections import deque

from unicode_segmentation_rs import split_word_bounds

# Rust's char::is_whitespace: the Unicode White_Space property (Python's str.isspace adds U+001C..U+001F)
WHITE_SPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def not_whitespace(w: str) -> bool:
    for c in w:  # for c in w.chars()
        if c not in WHITE_SPACE:  # if !c.is_whitespace()
            return True
    return False


def tokenize(s: str) -> list[str]:
    return [w for w in split_word_bounds(s) if not_whitespace(w)]  # s.split_word_bounds().filter(not_whitespace)


class ExactFilter:
    """The Bloom filter's three calls, on a set: an n-gram's "hashes" are its tokens."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, ...]] = set()

    def hashes(self, ngram: deque[str]) -> tuple[str, ...]:
        return tuple(ngram)

    def contains_hashes(self, hashes: tuple[str, ...]) -> bool:
        return hashes in self.seen

    def insert_hashes(self, hashes: tuple[str, ...]) -> None:
        self.seen.add(hashes)


def newline_windows(text: str, whole: bool) -> list[tuple[int, int]]:
    """Step 1's `newlines` and its `windows(2)`: [0, each "\\n"'s index, len]; a window after the first starts
    at its "\\n" (offsets here are Python str indices where Rust's are bytes: the same windows)."""
    if whole:  # if *remove_type == RemoveType::Document { vec![0, text.len()] }
        newlines = [0, len(text)]
    else:
        newlines = [0]
        newlines.extend(i for i, c in enumerate(text) if c == "\n")  # text.match_indices('\n')
        newlines.append(len(text))
    return list(zip(newlines, newlines[1:]))


def paragraph_hashes(paragraph: str, bloom_filter: ExactFilter, min_ngram_size: int, max_ngram_size: int) -> list:
    """Step 2, the same lines in process_line and process_line_oldboth."""
    hashes = []
    ngram: deque[str] = deque()  # VecDeque::with_capacity(max_ngram_size)
    for token in tokenize(paragraph):
        ngram.append(token)
        if len(ngram) >= max_ngram_size:  # Step 2b: ngram shingling long enough
            hashes.append(bloom_filter.hashes(ngram))
            ngram.popleft()
    if not hashes and len(ngram) >= min_ngram_size:  # Step 2c: unit is short, but not TOO SHORT
        hashes.append(bloom_filter.hashes(ngram))
    return hashes


def ratio_over(contained: int, total: int, threshold: float) -> bool:
    """`contained as f64 / total as f64 > threshold`: 0 / 0 is NaN in Rust, and NaN > t is false."""
    return total > 0 and contained / total > threshold


def process_line(
    text: str,
    bloom_filter: ExactFilter,
    min_ngram_size: int,
    max_ngram_size: int,
    remove_type: str,
    filtering_threshold: float,
    no_update_bloom_filter: bool = False,
) -> dict:
    """process_line for remove_type "paragraph" or "document" ("both" never reaches it: BFF's match sends
    Both to process_line_both). Returns the windows removed, the text left, and the n-gram counts."""
    windows_to_remove = []
    total_ngrams = 0
    total_contained_ngrams = 0
    for paragraph_window in newline_windows(text, remove_type == "document"):
        paragraph = text[paragraph_window[0] : paragraph_window[1]]
        hashes = paragraph_hashes(paragraph, bloom_filter, min_ngram_size, max_ngram_size)
        # Step 3: check containment of ngrams
        contained_ngrams = sum(1 for ngram in hashes if bloom_filter.contains_hashes(ngram))
        total_ngrams += len(hashes)
        total_contained_ngrams += contained_ngrams
        should_remove = ratio_over(contained_ngrams, len(hashes), filtering_threshold)
        if should_remove:
            windows_to_remove.append(paragraph_window)
        elif not no_update_bloom_filter:
            for ngram in hashes:  # Step 4: add all ngrams to the bloom filter if we don't remove it
                bloom_filter.insert_hashes(ngram)
    # Step 5 (remove_type Both) is unreachable here: Both goes to process_line_both
    return {
        "windows": windows_to_remove,
        "text": without_windows(text, windows_to_remove),
        "contained": total_contained_ngrams,
        "ngrams": total_ngrams,
    }


def process_line_oldboth(
    text: str,
    bloom_filter: ExactFilter,
    min_ngram_size: int,
    max_ngram_size: int,
    filtering_threshold: float,
    no_update_bloom_filter: bool = False,
) -> dict:
    """process_line_oldboth: paragraph removal as process_line, then the whole text emptied when the
    document's contained n-grams over all its n-grams (counted before any removal) exceed the threshold."""
    windows_to_remove = []
    total_ngrams = 0
    total_contained_ngrams = 0
    for paragraph_window in newline_windows(text, False):  # let newlines = if false { .. } else { .. }
        paragraph = text[paragraph_window[0] : paragraph_window[1]]
        hashes = paragraph_hashes(paragraph, bloom_filter, min_ngram_size, max_ngram_size)
        contained_ngrams = sum(1 for ngram in hashes if bloom_filter.contains_hashes(ngram))
        total_ngrams += len(hashes)
        total_contained_ngrams += contained_ngrams
        too_many_duplicate_ngrams = ratio_over(contained_ngrams, len(hashes), filtering_threshold)
        if too_many_duplicate_ngrams:
            windows_to_remove.append(paragraph_window)
        elif not no_update_bloom_filter:
            for ngram in hashes:
                bloom_filter.insert_hashes(ngram)
    output_paragraphs = without_windows(text, windows_to_remove)
    whole = ratio_over(total_contained_ngrams, total_ngrams, filtering_threshold)
    if whole:
        output_paragraphs = ""  # If we found enough duplicates to remove whole document too
    return {
        "windows": windows_to_remove,
        "text": output_paragraphs,
        "document_removed": whole,
        "contained": total_contained_ngrams,
        "ngrams": total_ngrams,
    }


def without_windows(text: str, windows: list[tuple[int, int]]) -> str:
    """The output text of both: the text between the windows removed."""
    output_paragraphs = ""
    last_end = 0
    for start, end in windows:
        output_paragraphs += text[last_end:start]
        last_end = end
    return output_paragraphs + text[last_end:]


def run_bff(
    texts: list[str], remove_type: str, min_ngram_size: int, max_ngram_size: int, filtering_threshold: float
) -> list[dict]:
    """process_file's loop over documents (one filter, documents in the order given) for one remove type (BFF's names: paragraph, document, old-both)."""
    bloom_filter = ExactFilter()
    results = []
    for text in texts:
        if remove_type == "old-both":
            result = process_line_oldboth(text, bloom_filter, min_ngram_size, max_ngram_size, filtering_threshold)
        else:
            result = process_line(text, bloom_filter, min_ngram_size, max_ngram_size, remove_type, filtering_threshold)
        results.append(result)
    return results


def removed_paragraphs(text: str, result: dict) -> set[int]:
    """The paragraphs (numbered as text.split("\\n") numbers them) whose windows BFF removed."""
    windows = newline_windows(text, False)
    return {windows.index(window) for window in result["windows"]}
