"""FineWeb's quality filter (Penedo et al. 2024), as datatrove 0.10.1's FineWebQualityFilter with FineWeb's
thresholds (its defaults).

Over the text's non-blank lines (split on newlines, not stripped):
- line_punct_ratio: under `line_punct_thr` of the lines end in terminal punctuation (datatrove's set, 159
  marks of many scripts); `line_punct_exclude_zero` exempts a text where none does;
- short_line_ratio: over `short_line_thr` of the lines are at most `short_line_length` characters;
- char_dup_ratio: the characters of lines that repeat an earlier line, over the text's characters without
  newlines, above `char_duplicates_ratio`;
- list_ratio: newlines per word above `new_line_ratio`, words counted as datatrove's spaCy tokenizer counts
  them (stages/english_split.py, stages/words.py's tokens).
A text without a non-blank line is `empty`. Datatrove stops at the first rule broken; the code here names every
one, `fineweb:line_punct_ratio,short_line_ratio`.
"""

from __future__ import annotations

import pyarrow as pa

from .english_split import count_words
from .ledger import run_on_alive

# datatrove.utils.text.TERMINAL_PUNCTUATION
TERMINAL_PUNCTUATION = tuple(
    "!.?\u0589\u061d\u061e\u061f\u06d4\u0700\u0701\u0702\u07f9\u0837\u0839\u083d\u083e\u0964\u0965\u104a"
    "\u104b\u1362\u1367\u1368\u166e\u1735\u1736\u17d4\u17d5\u17d6\u17d9\u17da\u1803\u1809\u1944\u1945"
    "\u1aa8\u1aa9\u1aaa\u1aab\u1b5a\u1b5b\u1b5e\u1b5f\u1b7d\u1b7e\u1c3b\u1c3c\u1c7e\u1c7f\u203c\u203d"
    "\u2047\u2048\u2049\u2e2e\u2e3c\u2e53\u2e54\u3002\ua4ff\ua60e\ua60f\ua6f3\ua6f7\ua876\ua877\ua8ce"
    "\ua8cf\ua92f\ua9c8\ua9c9\uaa5d\uaa5e\uaa5f\uaaf0\uaaf1\uabeb\ufe52\ufe56\ufe57\uff01\uff0e\uff1f"
    "\uff61\U00010a56\U00010a57\U00010f55\U00010f56\U00010f57\U00010f58\U00010f59\U00010f86\U00010f87"
    "\U00010f88\U00010f89\U00011047\U00011048\U000110be\U000110bf\U000110c0\U000110c1\U00011141\U00011142"
    "\U00011143\U000111c5\U000111c6\U000111cd\U000111de\U000111df\U00011238\U00011239\U0001123b\U0001123c"
    "\U000112a9\U0001144b\U0001144c\U000115c2\U000115c3\U000115c9\U000115ca\U000115cb\U000115cc\U000115cd"
    "\U000115ce\U000115cf\U000115d0\U000115d1\U000115d2\U000115d3\U000115d4\U000115d5\U000115d6\U000115d7"
    "\U00011641\U00011642\U0001173c\U0001173d\U0001173e\U00011944\U00011946\U00011a42\U00011a43\U00011a9b"
    "\U00011a9c\U00011c41\U00011c42\U00011ef7\U00011ef8\U00011f43\U00011f44\U00016a6e\U00016a6f\U00016af5"
    "\U00016b37\U00016b38\U00016b44\U00016e98\U0001bc9f\U0001da88"
)


def _duplicate_chars(lines: list[str]) -> int:
    """Characters of the lines that repeat an earlier one (datatrove's find_duplicates)."""
    seen: set[str] = set()
    chars = 0
    for line in lines:
        if line in seen:
            chars += len(line)
        else:
            seen.add(line)
    return chars


def fineweb_rules(
    text: str,
    *,
    line_punct_thr=0.12,
    line_punct_exclude_zero=False,
    short_line_thr=0.67,
    short_line_length=30,
    char_duplicates_ratio=0.01,
    new_line_ratio=0.3,
) -> list[str]:
    """Names of the FineWeb rules `text` breaks."""
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines:
        return ["empty"]
    broken = []
    ratio = sum(line.endswith(TERMINAL_PUNCTUATION) for line in lines) / len(lines)
    if ratio < line_punct_thr and not (ratio == 0 and line_punct_exclude_zero):
        broken.append("line_punct_ratio")
    if sum(len(line) <= short_line_length for line in lines) / len(lines) > short_line_thr:
        broken.append("short_line_ratio")
    if _duplicate_chars(lines) / len(text.replace("\n", "")) > char_duplicates_ratio:
        broken.append("char_dup_ratio")
    if text.count("\n") / count_words(text) > new_line_ratio:
        broken.append("list_ratio")
    return broken


class FineWebQuality:
    """The `fineweb` stage: rejects alive rows whose text breaks any rule, `fineweb:<rule>,<rule>`."""

    name = "fineweb"

    def __init__(self, **thresholds):
        self.thresholds = thresholds
        fineweb_rules(" ", **thresholds)  # fail now, not in a worker, on a misspelt keyword

    def __call__(self, batch: pa.Table) -> pa.Table:
        return run_on_alive(batch, self.name, self._compute, {})

    def _compute(self, alive: pa.Table):
        verdicts = [fineweb_rules(text or "", **self.thresholds) for text in alive["text"].to_pylist()]
        return {}, [f"{self.name}:{','.join(broken)}" if broken else None for broken in verdicts], None
