"""The `resiliparse-blocks` extractor: resiliparse's main content, then a small learned classifier that
keeps or drops each of its blocks (lines).

resiliparse's main-content heuristics keep nearly all of a page's main text (recall 0.96 on the realhtml
benchmark) but also menus, link lists, bylines and teasers (precision 0.81). Asked for `minimal_html`,
resiliparse still does all its work in C++ and hands back its lines with their links and block tags
(`<p>`, `<h1>`, `<li>`), which is enough to tell most boilerplate from text: the link density, the
length, the punctuation, the neighbours. A two-layer network per block (a second pass sees the first
pass's scores of the neighbours, since main text comes in runs) decides; its weights are
`data/extract_blocks.json`, written by benchmarks/train_extractor.py (numpy only, deterministic).

Everything here is numpy and the standard library; the model is a few kilobytes.
"""

from __future__ import annotations

import functools
import html
import json
import re
from pathlib import Path

import numpy as np

MODEL_PATH = Path(__file__).with_name("data") / "extract_blocks.json"

FEATURES = (
    "bias",
    "log_words",
    "log_chars",
    "link_density",  # characters inside <a> / characters
    "has_link",
    "sentence_end",
    "punctuation_per_10_chars",
    "digit_share",
    "tag_p",
    "tag_heading",
    "tag_li",
    "tag_none",
    "separator",  # | » ›, typical of breadcrumbs and menus
    "copyright",
    "cjk_share",
    "position",  # block index / blocks
    "words_before_share",  # share of the page's words before this block
    "words_vs_longest",
    "log_page_words",
    "previous_log_words",
    "next_log_words",
    "previous_link_density",
    "next_link_density",
    "window_log_words",  # mean over this block and 3 either side
    "window_link_density",
)
# The second pass: the first pass's features, plus its scores around each block.
SECOND_PASS_FEATURES = FEATURES + (
    "score",
    "window_score_1",
    "window_score_3",
    "window_score_8",
    "previous_score",
    "next_score",
    "page_best_score",
)

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_CHAR = re.compile(f"[{_CJK}]")
_TAG = re.compile(r"<[^>]*>")
_LINK = re.compile(r"<a\b[^>]*>(.*?)</a>", re.S)
_LEADING_TAG = re.compile(r"\s*<(p|h[1-6]|li|pre|ul|ol)\b")
_PUNCTUATION = re.compile(r"[,.;:!?\u3002\uff0c\u3001]")
_DIGIT = re.compile(r"\d")
_SENTENCE_END = (".", "!", "?", ":", ";", '"', "\u201d", "\u201c", "\u00bb", "\u2026", "\u3002", "\uff01", "\uff1f")


def _plain(markup: str) -> str:
    if "<" in markup:
        markup = _TAG.sub("", markup)
    if "&" in markup:
        markup = html.unescape(markup)
    return " ".join(markup.split())


def blocks(markup: str) -> tuple[list[str], list[tuple]]:
    """The text of each non-empty line of resiliparse's `minimal_html` output, and its own measurements
    (the per-block columns of FEATURES, before the page-level ones)."""
    texts: list[str] = []
    rows: list[tuple] = []
    for line in markup.replace("<br>", "\n").split("\n"):
        text = _plain(line)
        if not text:
            continue
        linked, links = 0, 0
        if "<a" in line:
            linked = sum(len(_plain(anchor)) for anchor in _LINK.findall(line))
            links = line.count("<a ")
        tag = _LEADING_TAG.match(line)
        name = tag.group(1) if tag else ""
        chars = len(text)
        # Words: white-space separated (_plain left one space between words), each CJK character one more
        # (those languages use no spaces).
        cjk = 0 if text.isascii() else len(_CJK_CHAR.findall(text))
        rows.append(
            (
                text.count(" ") + 1 + cjk,
                chars,
                min(linked / chars, 1.0),
                links > 0,
                text.endswith(_SENTENCE_END),
                10 * len(_PUNCTUATION.findall(text)) / chars,
                len(_DIGIT.findall(text)) / chars,
                name == "p",
                name[:1] == "h",
                name == "li",
                name == "",
                "|" in text or "\u00bb" in text or "\u203a" in text,
                "\u00a9" in text,
                cjk / chars,
            )
        )
        texts.append(text)
    return texts, rows


def window_mean(values: np.ndarray, radius: int) -> np.ndarray:
    """Mean of each value and the `radius` values either side (fewer at the ends)."""
    sums = np.concatenate([[0.0], np.cumsum(values)])
    index = np.arange(len(values))
    low, high = np.maximum(index - radius, 0), np.minimum(index + radius + 1, len(values))
    return (sums[high] - sums[low]) / (high - low)


def features(rows: list[tuple]) -> np.ndarray:
    """The FEATURES matrix (blocks x features) of one page's blocks."""
    own = np.array(rows, dtype=np.float64)
    count = len(rows)
    words = own[:, 0]
    log_words = np.log1p(words)
    link_density = own[:, 2]
    total = words.sum()
    matrix = np.zeros((count, len(FEATURES)))
    matrix[:, 0] = 1.0
    matrix[:, 1] = log_words
    matrix[:, 2] = np.log1p(own[:, 1])
    matrix[:, 3:15] = own[:, 2:14]
    matrix[:, 15] = np.arange(count) / max(count - 1, 1)
    matrix[:, 16] = (np.cumsum(words) - words) / max(total, 1.0)
    matrix[:, 17] = words / max(words.max(), 1.0)
    matrix[:, 18] = np.log1p(total)
    matrix[1:, 19] = log_words[:-1]
    matrix[:-1, 20] = log_words[1:]
    matrix[1:, 21] = link_density[:-1]
    matrix[:-1, 22] = link_density[1:]
    matrix[:, 23] = window_mean(log_words, 3)
    matrix[:, 24] = window_mean(link_density, 3)
    return matrix


def second_pass_features(first: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """SECOND_PASS_FEATURES: the first pass's features and its scores around each block."""
    extra = np.zeros((len(scores), 7))
    extra[:, 0] = scores
    extra[:, 1] = window_mean(scores, 1)
    extra[:, 2] = window_mean(scores, 3)
    extra[:, 3] = window_mean(scores, 8)
    extra[1:, 4] = scores[:-1]
    extra[:-1, 5] = scores[1:]
    extra[:, 6] = scores.max()
    return np.hstack([first, extra])


class Network:
    """One hidden tanh layer, a logistic output; inputs standardized with the training set's mean and
    deviation."""

    def __init__(self, mean, scale, hidden_weights, hidden_bias, output_weights, output_bias):
        self.mean = np.asarray(mean, dtype=np.float64)
        self.scale = np.asarray(scale, dtype=np.float64)
        self.hidden_weights = np.asarray(hidden_weights, dtype=np.float64)
        self.hidden_bias = np.asarray(hidden_bias, dtype=np.float64)
        self.output_weights = np.asarray(output_weights, dtype=np.float64)
        self.output_bias = float(output_bias)

    def __call__(self, matrix: np.ndarray) -> np.ndarray:
        hidden = np.tanh(((matrix - self.mean) / self.scale) @ self.hidden_weights + self.hidden_bias)
        return 1.0 / (1.0 + np.exp(-(hidden @ self.output_weights + self.output_bias)))

    def to_json(self) -> dict:
        return {
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "hidden_weights": self.hidden_weights.tolist(),
            "hidden_bias": self.hidden_bias.tolist(),
            "output_weights": self.output_weights.tolist(),
            "output_bias": self.output_bias,
        }


class BlockModel:
    """The two passes and the score a block needs to be kept."""

    def __init__(self, first: Network, second: Network, threshold: float):
        self.first = first
        self.second = second
        self.threshold = threshold

    def scores(self, rows: list[tuple]) -> np.ndarray:
        matrix = features(rows)
        return self.second(second_pass_features(matrix, self.first(matrix)))

    def select(self, markup: str) -> str:
        """The kept blocks' text, one block a line; every block when none scores enough (the quality stage
        decides about pages with little text)."""
        texts, rows = blocks(markup)
        if not texts:
            return ""
        keep = self.scores(rows) >= self.threshold
        if not keep.any():
            return "\n".join(texts)
        return "\n".join(text for text, kept in zip(texts, keep) if kept)

    def to_json(self) -> dict:
        return {
            "features": list(FEATURES),
            "first": self.first.to_json(),
            "second": self.second.to_json(),
            "threshold": self.threshold,
        }

    @classmethod
    def from_json(cls, data: dict) -> BlockModel:
        if data["features"] != list(FEATURES):
            raise ValueError("the block model was trained on other features; rerun benchmarks/train_extractor.py")
        return cls(Network(**data["first"]), Network(**data["second"]), float(data["threshold"]))


@functools.lru_cache(maxsize=1)
def shipped_model() -> BlockModel:
    """The model in stages/data, loaded once per process."""
    return BlockModel.from_json(json.loads(MODEL_PATH.read_text(encoding="utf-8")))


def main_content_markup(html_text: str, include_comments: bool = False) -> str:
    """resiliparse's main content of one decoded page as `minimal_html`: the lines the model judges."""
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    return extract_plain_text(
        HTMLTree.parse(html_text),
        preserve_formatting="minimal_html",
        main_content=True,
        links=True,
        alt_texts=False,
        comments=include_comments,
    )


def extract(html_text: str, include_comments: bool = False) -> str:
    """The main text of one decoded page, one block a line."""
    return shipped_model().select(main_content_markup(html_text, include_comments))
