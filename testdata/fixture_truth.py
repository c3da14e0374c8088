"""The fixture crawl's ground truth: text measures, the Gopher rules as a check of its own texts, and the
labels of its documents (clean, exact and near duplicates with their survivors)."""

from __future__ import annotations

import re
from collections import Counter


# --------------------------------------------------------------------------------------------
# Text measures (ground truth) and a Gopher-rules sanity check of the fixture's own texts
# --------------------------------------------------------------------------------------------
def norm(text: str) -> str:
    return " ".join(text.lower().split())


def shingles(text: str, n: int = 5) -> set[tuple[str, ...]]:
    w = text.lower().split()
    return {tuple(w[i : i + n]) for i in range(len(w) - n + 1)}


def jaccard(a: str, b: str) -> float:
    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) / len(sa | sb)


STOP_WORDS = {"the", "be", "to", "of", "and", "that", "have", "with"}
BULLETS = ("\u2022", "\u2023", "\u25b6", "\u25cf", "\u25e6", "\u25a0", "\u25a1", "\u25aa", "\u25ab", "\u2013", "-", "*")


def gopher_failures(text: str) -> list[str]:
    """The Gopher (Rae et al. 2021) quality and repetition rules; returns the rules that fire."""
    fails = []
    words = text.split()
    n = len(words)
    if not 50 <= n <= 100_000:
        fails.append("word_count")
    if n:
        mean = sum(len(w) for w in words) / n
        if not 3 <= mean <= 10:
            fails.append("mean_word_length")
        if (text.count("#") + text.count("...") + text.count("\u2026")) / n > 0.1:
            fails.append("symbol_ratio")
        if sum(any(c.isalpha() for c in w) for w in words) / n < 0.8:
            fails.append("alpha_words")
        if sum(w.lower().strip(".,;:!?") in STOP_WORDS for w in words) < 2:
            fails.append("stop_words")
    lines = [line for line in text.split("\n") if line.strip()]
    if lines:
        if sum(line.lstrip().startswith(BULLETS) for line in lines) / len(lines) > 0.9:
            fails.append("bullet_lines")
        if sum(line.rstrip().endswith(("...", "\u2026")) for line in lines) / len(lines) > 0.3:
            fails.append("ellipsis_lines")
    # repetition
    total_chars = max(1, len(text))
    for unit, parts, fthr, cthr in (
        ("line", lines, 0.3, 0.2),
        ("paragraph", [p for p in re.split(r"\n{2,}", text) if p.strip()], 0.3, 0.2),
    ):
        seen, dup, dup_chars = set(), 0, 0
        for p in parts:
            if p in seen:
                dup += 1
                dup_chars += len(p)
            seen.add(p)
        if parts and (dup / len(parts) > fthr or dup_chars / total_chars > cthr):
            fails.append(f"dup_{unit}")
    lw = [w.lower() for w in words]
    wchars = max(1, sum(len(w) for w in lw))
    for k, thr in ((2, 0.20), (3, 0.18), (4, 0.16)):
        grams = Counter(tuple(lw[i : i + k]) for i in range(len(lw) - k + 1))
        if grams:
            g, c = grams.most_common(1)[0]
            if c > 1 and sum(len(x) for x in g) * c / wchars > thr:
                fails.append(f"top_{k}gram")
    for k, thr in zip(range(5, 11), (0.15, 0.14, 0.13, 0.12, 0.11, 0.10)):
        grams = Counter(tuple(lw[i : i + k]) for i in range(len(lw) - k + 1))
        covered = [False] * len(lw)
        for i in range(len(lw) - k + 1):
            if grams[tuple(lw[i : i + k])] > 1:
                for j in range(i, i + k):
                    covered[j] = True
        if sum(len(w) for w, c in zip(lw, covered) if c) / wchars > thr:
            fails.append(f"dup_{k}gram")
    return fails


def label_documents(records: list[dict]) -> None:
    """Assign kinds to English article pages: clean / exact_duplicate / near_duplicate, with
    survivors chosen by (file name, offset) order; record jaccard and check the texts."""
    order = sorted(records, key=lambda r: (r["file"], r["offset"]))
    assert order == records
    pages = [r for r in records if "_item" in r and r["_item"].get("article_key") and r["kind"] != "malformed"]
    groups: dict[str, dict] = {}
    for r in pages:
        item = r["_item"]
        r["words"] = len(item["text"].split())
        if item.get("near_of"):
            continue
        g = norm(item["text"])
        if g in groups:
            first = groups[g]
            r["kind"] = "exact_duplicate"
            r["duplicate_of"] = first["url"]
            r["jaccard"] = round(jaccard(first["_item"]["text"], item["text"]), 4)
        else:
            groups[g] = r
            r["kind"] = "clean"
    survivors_by_key = {r["_item"]["article_key"]: r for r in groups.values()}
    for r in pages:
        item = r["_item"]
        if item.get("near_of"):
            orig = survivors_by_key[item["near_of"]]
            assert (orig["file"], orig["offset"]) < (r["file"], r["offset"])
            j = jaccard(orig["_item"]["text"], item["text"])
            assert 0.75 <= j <= 0.95, (r["url"], j)
            r["kind"] = "near_duplicate"
            r["duplicate_of"] = orig["url"]
            r["jaccard"] = round(j, 4)
        r["lang"] = "en"
        fails = gopher_failures(item["text"])
        assert not fails, (r["url"], fails)
        assert 150 <= r["words"] <= 400, (r["url"], r["words"])
    # distinct articles really are distinct; near duplicates resemble only their original
    survivors = list(groups.values())
    for i, a in enumerate(survivors):
        for b in survivors[i + 1 :]:
            assert jaccard(a["_item"]["text"], b["_item"]["text"]) < 0.1, (a["url"], b["url"])
    for r in pages:
        if r["kind"] == "near_duplicate":
            best = max(survivors, key=lambda s: jaccard(s["_item"]["text"], r["_item"]["text"]))
            assert best["url"] == r["duplicate_of"]
    # the other documents
    for r in records:
        item = r.get("_item")
        if not item:
            continue
        if r["kind"] == "non_english":
            assert len(item["text"].split()) >= 100, r["url"]
            r["words"] = len(item["text"].split())
        if r["kind"] == "junk":
            fails = gopher_failures(item["text"])
            want = {
                "spam": "symbol_ratio",
                "bullets": "bullet_lines",
                "repetition": "dup_line",
                "short": "word_count",
                "nav": "word_count",
            }[r["junk_kind"]]
            assert want in fails, (r["url"], fails)
    kinds = Counter(r["kind"] for r in records)
    assert kinds["exact_duplicate"] == 3 and kinds["near_duplicate"] == 3, kinds
