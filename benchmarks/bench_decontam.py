"""Decontamination benchmark (docs/benchmarks.md "Decontamination"): recall and precision on eval items planted
into real pages, the stage's throughput with a 100k-item index, and the n-gram index as a sorted hash array
against a Bloom filter.

    .venv/bin/python benchmarks/bench_decontam.py quality      # planted contamination: recall per kind, precision
    .venv/bin/python benchmarks/bench_decontam.py throughput   # documents per CPU-second, 100k items, against quality
    .venv/bin/python benchmarks/bench_decontam.py index        # sorted array vs Bloom filter; index size by items

The planted set comes from ../shared/realhtml/ground_truth.jsonl (the `main_text` of real pages, those of at
least 100 words, each text once): eval items are passages of 20 to 80 words of some pages (the sources), and
each item is planted into other pages (the hosts), one planting per host, in one of three kinds:

    verbatim  the passage as it is
    edited    one word in 20 (at least one) replaced by another page's word, one in 10 upper-cased or
              capitalized, a comma added or dropped
    edited_12 the same, but every 12th word replaced, so that no 13-gram of the item is left: what the near
              detector is for
    span      a run of 13 words of the passage only (words: tokens with a letter or digit)

and the remaining pages are clean (no planting), for precision. A clean page that happens to share a 13-gram of
plain lower-case word tokens with an item (the same article in two datasets) is left out, found by a separate
plain-Python check, so that precision counts the detector's own false hits only.
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import re
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stages.decontaminate import Decontaminate, EvalSet, NgramIndex, match_text, search  # noqa: E402
from stages.quality import GopherQuality, GopherRepetition  # noqa: E402
from stages.warc_read import DOCUMENT_SCHEMA  # noqa: E402

GROUND_TRUTH = ROOT.parent / "shared" / "realhtml" / "ground_truth.jsonl"
KINDS = ("verbatim", "edited", "edited_12", "span")
SEED = 15
BATCH = 64


def pages() -> list[str]:
    """The ground truth's main texts of at least 100 words, each once, in file order."""
    texts = [json.loads(line)["main_text"] for line in GROUND_TRUTH.open()]
    return list(dict.fromkeys(t for t in texts if t and len(t.split()) >= 100))


# --- the planted set ------------------------------------------------------------------------------------------


def plant(texts: list[str], count: int, rng: random.Random):
    """(items, documents): items {id, text}; documents {text, kind, item} with kind in KINDS or 'clean'."""
    order = list(range(len(texts)))
    rng.shuffle(order)
    sources, rest = order[: count // 2], order[count // 2 :]
    items: list[dict[str, str]] = []
    for page in sources:  # two passages per source page, from its two halves
        words = texts[page].split()
        for half in (0, 1):
            length = rng.randint(20, 80)
            low, high = half * len(words) // 2, (half + 1) * len(words) // 2 - length
            start = rng.randint(low, max(low, high))
            items.append({"id": f"item-{len(items)}", "text": " ".join(words[start : start + length])})
    vocabulary = [w for page in rest[:50] for w in texts[page].split() if w.isalpha()]
    documents: list[dict[str, str | None]] = []
    hosts = iter(rest)
    for kind in KINDS:
        for item in items:
            host = texts[next(hosts)]
            documents.append(
                {
                    "text": insert(host, planted(item["text"], kind, vocabulary, rng), rng),
                    "kind": kind,
                    "item": item["id"],
                }
            )
    documents += [{"text": texts[page], "kind": "clean", "item": None} for page in hosts]
    return items, documents


def planted(text: str, kind: str, vocabulary: list[str], rng: random.Random) -> str:
    words = text.split()
    if kind == "span":  # 13 words: tokens with a letter or digit (a lone `*` or `-` is no word)
        counted = [i for i, word in enumerate(words) if any(c.isalnum() for c in word)]
        first = rng.randint(0, max(0, len(counted) - 13))
        return " ".join(words[counted[first] : counted[min(first + 12, len(counted) - 1)] + 1])
    if kind.startswith("edited"):
        changed = (
            rng.sample(range(len(words)), max(1, len(words) // 20))
            if kind == "edited"
            else range(rng.randrange(12), len(words), 12)  # every 13 words hold a changed one
        )
        for position in changed:
            words[position] = rng.choice(vocabulary)
        for position in rng.sample(range(len(words)), max(1, len(words) // 10)):
            words[position] = words[position].upper() if rng.random() < 0.5 else words[position].capitalize()
        position = rng.randrange(len(words))
        words[position] = words[position].rstrip(",") if words[position].endswith(",") else words[position] + ","
    return " ".join(words)


def insert(host: str, passage: str, rng: random.Random) -> str:
    """The passage put between two words of the host (at a line break, as a paragraph, half the time)."""
    words = host.split(" ")
    at = rng.randint(0, len(words))
    glue = "\n\n" if rng.random() < 0.5 else " "
    return " ".join(words[:at]) + glue + passage + glue + " ".join(words[at:])


def plain_ngrams(text: str, n: int = 13) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def batches(texts: list[str]):
    for start in range(0, len(texts), BATCH):
        chunk = texts[start : start + BATCH]
        rows: dict[str, list] = {name: [None] * len(chunk) for name in DOCUMENT_SCHEMA.names}
        rows.update(order=list(range(start, start + len(chunk))), id=[str(i) for i in range(len(chunk))], text=chunk)
        yield pa.Table.from_pydict(rows, schema=DOCUMENT_SCHEMA)


def verdicts(stage, texts: list[str]) -> tuple[list[str | None], float]:
    """Each document's reject detail (None: kept), and the CPU seconds the stage took."""
    stage.index()  # built before the clock starts
    details: list[str | None] = []
    start = time.process_time()
    for batch in batches(texts):
        out = stage(batch)
        details += [d if s else None for s, d in zip(out["stage"].to_pylist(), out["detail"].to_pylist())]
    return details, time.process_time() - start


def quality(args) -> None:
    rng = random.Random(args.seed)  # another seed: other items, hosts and edits than the defaults were set on
    items, documents = plant(pages(), args.items, rng)
    item_grams = set().union(*(plain_ngrams(item["text"]) for item in items))
    overlapping = [d for d in documents if d["kind"] == "clean" and plain_ngrams(d["text"]) & item_grams]
    documents = [d for d in documents if not any(d is o for o in overlapping)]
    folder = Path(args.work)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "items.jsonl").write_text("".join(json.dumps(item) + "\n" for item in items))
    print(
        f"{len(items)} items of 20-80 words; {len(documents)} documents; {len(overlapping)} clean pages left out "
        f"(they share a 13-gram with an item)"
    )
    eval_set = EvalSet("planted", str(folder / "items.jsonl"))
    texts = [d["text"] for d in documents]
    recalls = " | ".join(f"{kind} recall" for kind in KINDS)
    print(f"| detectors | {recalls} | item named right | precision | false hits on clean pages | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, near in (("13-gram", False), ("13-gram + near", True)):
        details, seconds = verdicts(Decontaminate([eval_set], near_detector=near), texts)
        recall = {kind: np.mean([bool(v) for v, d in zip(details, documents) if d["kind"] == kind]) for kind in KINDS}
        planted_hits = [(v, d) for v, d in zip(details, documents) if v and d["kind"] != "clean"]
        named = np.mean([f"item {d['item']} " in v for v, d in planted_hits])
        false = sum(bool(v) for v, d in zip(details, documents) if d["kind"] == "clean")
        clean = sum(d["kind"] == "clean" for d in documents)
        precision = len(planted_hits) / max(1, len(planted_hits) + false)
        recalls = " | ".join(f"{recall[kind]:.3f}" for kind in KINDS)
        print(f"| {label} | {recalls} | {named:.3f} | {precision:.3f} | {false} of {clean} | {seconds:.1f} |")


# --- throughput ------------------------------------------------------------------------------------------------


def synthetic_items(texts: list[str], count: int, rng: random.Random) -> list[str]:
    """`count` items of 20-80 words: real sentences' words, shuffled within the item, so that the index has real
    vocabulary and lengths but (almost) no 13-gram of the pages."""
    sentences = [s for t in texts for s in re.split(r"(?<=[.!?])\s+", t) if len(s.split()) >= 5]
    items: list[str] = []
    while len(items) < count:
        words: list[str] = []
        length = rng.randint(20, 80)
        while len(words) < length:
            words += rng.choice(sentences).split()
        words = words[:length]
        rng.shuffle(words)
        items.append(" ".join(words))
    return items


def throughput(args) -> None:
    rng = random.Random(SEED)
    texts = pages()
    folder = Path(args.work)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "synthetic.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in synthetic_items(texts, args.items, rng)))
    words = sum(len(t.split()) for t in texts)
    print(f"{len(texts)} real pages ({words / len(texts):.0f} words on average), {args.items:,} synthetic items")
    print("| stage | build s | index MB | CPU s | documents per CPU-second | hits |")
    print("|---|---|---|---|---|---|")
    for label, near in (("contamination, 13-gram", False), ("contamination, 13-gram + near", True)):
        stage = Decontaminate([EvalSet("synthetic", str(path))], near_detector=near)
        start = time.process_time()
        index = stage.index()
        build = time.process_time() - start
        size = sum(d.nbytes for d in (index.ngram, index.near) if d is not None) / 1e6
        details, seconds = verdicts(stage, texts)
        print(
            f"| {label} | {build:.1f} | {size:.0f} | {seconds:.2f} | {len(texts) / seconds:,.0f} | {sum(map(bool, details))} |"
        )
    for label, rules in (
        ("quality (Gopher rules)", GopherQuality()),
        ("repetition (Gopher rules)", GopherRepetition()),
    ):
        start = time.process_time()
        for batch in batches(texts):
            rules(batch)
        seconds = time.process_time() - start
        print(f"| {label} | | | {seconds:.2f} | {len(texts) / seconds:,.0f} | |")


# --- the index structure ---------------------------------------------------------------------------------------


class Bloom:
    """A Bloom filter of 64-bit hashes: k bit positions by double hashing of the hash's two 32-bit halves."""

    def __init__(self, hashes: np.ndarray, false_positive_rate: float = 0.01):
        n = max(1, len(hashes))
        self.bits = int(-n * np.log(false_positive_rate) / np.log(2) ** 2)
        self.k = max(1, round(self.bits / n * np.log(2)))
        self.array = np.zeros((self.bits + 7) // 8, np.uint8)
        positions = self._positions(hashes).ravel()
        np.bitwise_or.at(self.array, positions >> 3, (1 << (positions & 7)).astype(np.uint8))

    def _positions(self, hashes: np.ndarray) -> np.ndarray:
        low, high = hashes & np.uint64(0xFFFFFFFF), hashes >> np.uint64(32)
        steps = np.arange(self.k, dtype=np.uint64)
        return ((low[:, None] + steps[None, :] * high[:, None]) % np.uint64(self.bits)).astype(np.int64)

    def __contains__(self, hashes: np.ndarray) -> np.ndarray:  # type: ignore[override]
        positions = self._positions(hashes)
        return ((self.array[positions >> 3] >> (positions & 7)) & 1).all(axis=1)


def index(args) -> None:
    rng = random.Random(SEED)
    texts = pages()
    print(
        "| items | item 13-grams | sorted array (keys + items) MB | + bitmap MB | build s | Bloom 1% MB | Bloom build s |"
    )
    print("|---|---|---|---|---|---|---|")
    items = synthetic_items(texts, max(args.sizes), rng)
    for size in args.sizes:
        normalized = match_text(items[:size])
        start = time.process_time()
        ngrams = NgramIndex(normalized, 13, 1)
        build = time.process_time() - start
        hashed = ngrams.index
        start = time.process_time()
        bloom = Bloom(hashed.keys)
        bloom_build = time.process_time() - start
        print(
            f"| {size:,} | {len(hashed.keys):,} | {(hashed.keys.nbytes + hashed.owners.nbytes) / 1e6:.1f} | "
            f"{hashed.bitmap.nbytes / 1e6:.1f} | {build:.2f} | {bloom.array.nbytes / 1e6:.1f} | {bloom_build:.2f} |"
        )
    queries, _ = ngrams.hashers[13].shingle_hashes(match_text(texts))
    truly = np.zeros(len(queries), bool)
    rows = []
    for label, find in (
        (
            "sorted uint64 array (np.searchsorted, queries sorted)",
            lambda: search(hashed.keys, hashed.owners, queries)[0],
        ),
        ("the same behind a one-hash bitmap of 16 bits per key (the stage's)", lambda: hashed.lookup(queries)[0]),
        (f"Bloom filter, 1%, k = {bloom.k} (membership only)", lambda: np.flatnonzero(bloom.__contains__(queries))),
    ):
        start = time.process_time()
        found = find()
        seconds = time.process_time() - start
        if not truly.any():
            truly[found] = True
        hit = np.zeros(len(queries), bool)
        hit[found] = True
        false = (hit & ~truly).sum() / max(1, (~truly).sum())
        rows.append(f"| {label} | {seconds / len(queries) * 1e9:.0f} | {false:.4f} |")
    print()
    print(f"lookups of the {len(queries):,} 13-grams of {len(texts)} real pages in the {max(args.sizes):,}-item index:")
    print("| structure | ns per lookup | false positive rate |")
    print("|---|---|---|")
    print("\n".join(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["quality", "throughput", "index"])
    parser.add_argument("--items", type=int, default=None, help="quality: items (200); throughput: 100000")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000], help="index: items")
    parser.add_argument("--seed", type=int, default=SEED, help="quality: the planting's random seed")
    parser.add_argument("--work", default="/tmp/bench_decontam", help="where eval files are written")
    args = parser.parse_args()
    args.items = args.items or (200 if args.what == "quality" else 100_000)
    print(f"# bench_decontam.py {args.what}, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC")
    {"quality": quality, "throughput": throughput, "index": index}[args.what](args)


if __name__ == "__main__":
    main()
