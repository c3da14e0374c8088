"""Near-dedup benchmark: signature speed and estimate quality against datasketch and rensa, and the whole
dedup (signatures, buckets, clustering, reject write) on synthetic corpora with planted near duplicates.

    .venv/bin/pip install -e ".[bench]"
    .venv/bin/python benchmarks/bench_dedup.py signatures            # speed and error on 2,000-word documents
    .venv/bin/python benchmarks/bench_dedup.py corpus --docs 250000   # one scale point (a fresh process each)
    .venv/bin/python benchmarks/bench_dedup.py all                     # signatures, then 250k, 500k, 1M
    .venv/bin/python benchmarks/bench_dedup.py realhtml  # duplicates among ../shared/realhtml's main texts
    .venv/bin/python benchmarks/bench_dedup.py paragraphs --docs 100000  # paragraph dedup (dedup.paragraphs)

The corpus: documents of about 300 words drawn from a Zipf distribution over the English vocabulary of the
project's fixture articles plus a long tail of rare words; 20% of the documents are edited copies of
earlier ones, with a span of words replaced so that the true 5-shingle Jaccard similarity spreads from 1.0
(whole copies) down to 0.5. True similarities are computed exactly from the word lists.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
import unicodedata
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHINGLE = 5
COPY_SHARE = 0.2
WORDS_PER_DOC = 300


# ---------------------------------------------------------------------------------------------
# corpus


def vocabulary(rng: np.random.Generator, size: int = 50_000) -> np.ndarray:
    source = (ROOT / "testdata" / "fixture_pages.yaml").read_text(encoding="utf-8")  # the fixture crawl's text
    english = sorted(set(re.findall(r"\b[a-z]{2,12}\b", source.lower())))
    tail = [f"{english[i % len(english)]}{i}" for i in range(size - len(english))]
    words = np.array(english + tail)
    rng.shuffle(words)
    return words


def zipf(size: int) -> np.ndarray:
    """The chance of each of `size` words by rank, Zipf's law with exponent 1.07."""
    p = 1.0 / np.arange(1, size + 1) ** 1.07
    return p / p.sum()


def corpus(n_docs: int, seed: int = 7):
    """(word id matrix, copy_of) where copy_of[i] is the document i was copied from, or -1."""
    rng = np.random.default_rng(seed)
    vocab_size = 50_000
    p = zipf(vocab_size)
    words = rng.choice(vocab_size, size=(n_docs, WORDS_PER_DOC), p=p).astype(np.int32)
    copy_of = np.full(n_docs, -1, dtype=np.int64)
    copies = rng.choice(np.arange(n_docs // 10, n_docs), int(n_docs * COPY_SHARE), replace=False)
    copy_of[copies] = (rng.random(len(copies)) * copies).astype(np.int64)  # an earlier document
    originals = copy_of[copies]
    # a span of L replaced words changes about L + 4 shingles on each side: L from 0 to ~100 covers J 1..0.5
    spans = rng.integers(0, 104, len(copies))
    starts = rng.integers(0, WORDS_PER_DOC - spans + 1)
    words[copies] = words[originals]
    for doc, start, span in zip(copies, starts, spans):
        words[doc, start : start + span] = rng.choice(vocab_size, span, p=p)
    copy_of[np.isin(copy_of, copies)] = -1  # keep clusters simple: no copy of a copy
    return words, copy_of


def shingles(row: np.ndarray) -> set:
    return set(zip(*(row[k : len(row) - SHINGLE + 1 + k] for k in range(SHINGLE))))


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) / len(sa | sb)


def write_corpus(words: np.ndarray, vocab: np.ndarray, folder: Path, chunk: int = 50_000) -> None:
    """The corpus as the filter pass leaves it: one Parquet file per `chunk` documents (a dedup task each)."""
    folder.mkdir()
    for start in range(0, len(words), chunk):
        block = words[start : start + chunk]
        texts = [" ".join(vocab[row]) for row in block]
        orders = np.arange(start, start + len(block), dtype=np.int64)
        table = pa.table(
            {
                "order": orders,
                "id": [f"doc-{i}" for i in orders],
                "text": texts,
                "stage": pa.nulls(len(orders), pa.string()),
            }
        )  # all alive, as the filter pass marks them
        pq.write_table(table, folder / f"file-{start // chunk:06d}.parquet", row_group_size=10_000)


# ---------------------------------------------------------------------------------------------
# measuring


class PeakMemory:
    """Peak of the summed proportional set size (PSS) of this process (or of process `pid`) and all its
    descendants (Ray's workers included), sampled twice a second."""

    def __init__(self, pid: int | None = None):
        import psutil

        self.psutil, self.pid, self.peak, self.running = psutil, pid, 0, True
        self.largest = 0  # the largest one process of the tree reached, the root excluded
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()

    def sample(self):
        while self.running:
            total = 0
            try:
                me = self.psutil.Process(self.pid)
                tree = [me] + me.children(recursive=True)
            except self.psutil.NoSuchProcess:  # a subprocess being sampled has ended
                break
            for proc in tree:
                try:
                    pss = proc.memory_full_info().pss
                    total += pss
                    if proc is not me:
                        self.largest = max(self.largest, pss)
                except (self.psutil.NoSuchProcess, self.psutil.AccessDenied):
                    pass
            self.peak = max(self.peak, total)
            time.sleep(0.5)

    def stop(self) -> float:
        self.running = False
        self.thread.join()
        return self.peak / 2**30


def run_corpus(n_docs: int, shards: int, object_store_mb: int) -> dict:
    import ray

    from pipeline.passes import dedup
    from pipeline.config import DedupConfig, RayConfig
    from pipeline.engines.engine_ray import start_ray

    work = ROOT / "out" / f"bench-dedup-{n_docs}"
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    rng = np.random.default_rng(1)
    vocab = vocabulary(rng)
    t = time.perf_counter()
    words, copy_of = corpus(n_docs)
    write_corpus(words, vocab, work / "filtered")
    generate_seconds = time.perf_counter() - t

    memory = PeakMemory()
    start_ray(RayConfig(num_cpus=2, object_store_mb=object_store_mb))
    t = time.perf_counter()
    cpu_before = _cpu_seconds()
    verdicts, seconds = dedup.run(work / "filtered", DedupConfig(shards=shards), work)
    rejects = verdicts.append_column("id", pa.array([f"doc-{o}" for o in verdicts["order"].to_pylist()]))
    pq.write_table(rejects, work / "rejects.parquet")
    wall = time.perf_counter() - t
    cpu = _cpu_seconds() - cpu_before
    ray.shutdown()
    peak_gb = memory.stop()

    flagged = {o: int(d.split("-")[1]) for o, d in zip(verdicts["order"].to_pylist(), verdicts["dup_of"].to_pylist())}
    return {
        "docs": n_docs,
        "shards": shards,
        "object_store_mb": object_store_mb,
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(cpu, 1),
        "peak_pss_gb": round(peak_gb, 2),
        "stage_seconds": {k: round(v, 1) for k, v in seconds.items()},
        **quality(flagged, words, copy_of),
        "corpus_seconds": round(generate_seconds, 1),
    }


def quality(flagged: dict[int, int], words: np.ndarray, copy_of: np.ndarray) -> dict:
    """A dedup's result against the planted truth. `flagged` maps each removed document's order to the order
    of the document it was judged a duplicate of. Recall: planted copies with J >= 0.8 flagged as duplicates
    of their own original; precision: flagged pairs whose true J >= 0.7."""
    planted = np.flatnonzero(copy_of >= 0)
    truth = {int(c): jaccard(words[c], words[copy_of[c]]) for c in planted}
    high = [c for c, j in truth.items() if j >= 0.8]
    found = sum(1 for c in high if flagged.get(c) == copy_of[c])
    pair_j = [truth[o] if copy_of[o] == s else jaccard(words[o], words[s]) for o, s in flagged.items()]
    return {
        "planted_pairs": len(truth),
        "pairs_j_ge_0.8": len(high),
        "recall_j_ge_0.8": round(found / max(1, len(high)), 4),
        "flagged": len(flagged),
        "precision_j_ge_0.7": round(float(np.mean(np.array(pair_j) >= 0.7)), 4),
    }


def _cpu_seconds() -> float:
    """CPU time of this process and its descendants (Ray workers), from /proc."""
    import psutil

    me = psutil.Process()
    total = 0.0
    for proc in [me] + me.children(recursive=True):
        try:
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


def signatures_benchmark(n_docs: int = 2000, words_per_doc: int = 2000) -> dict:
    """Documents per CPU-second for signatures (shingling included) and estimate error, same documents."""
    import datasketch
    import rensa

    from stages.dedup import MinHasher

    rng = np.random.default_rng(3)
    vocab = vocabulary(rng)
    p = 1.0 / np.arange(1, len(vocab) + 1) ** 1.07
    p /= p.sum()
    ids = rng.choice(len(vocab), size=(n_docs, words_per_doc), p=p)
    texts = [" ".join(vocab[row]) for row in ids]

    def shingle_strings(text):
        w = text.lower().split()
        return [" ".join(w[i : i + SHINGLE]) for i in range(len(w) - SHINGLE + 1)]

    results = {}
    hasher = MinHasher(128)
    hasher.signatures(texts[:10])  # compile the kernel outside the timing
    column = pa.array(texts)  # in the belt, texts arrive as an Arrow column
    t = time.process_time()
    hasher.signatures(column)
    results["crawlbelt (one-permutation, numba), Arrow column"] = n_docs / (time.process_time() - t)
    t = time.process_time()
    hasher.signatures(texts)
    results["crawlbelt, from Python strings"] = n_docs / (time.process_time() - t)

    t = time.process_time()
    for text in texts[:400]:
        rensa.RMinHash(num_perm=128, seed=1).update(shingle_strings(text))
    results["rensa 0.5.0 RMinHash"] = 400 / (time.process_time() - t)

    t = time.process_time()
    for text in texts[:200]:
        m = datasketch.MinHash(num_perm=128)
        m.update_batch([s.encode() for s in shingle_strings(text)])
        m.digest()
    results["datasketch 2.0.0 update_batch (sha1)"] = 200 / (time.process_time() - t)

    # estimate error on pairs over the whole range of similarity, against exact Jaccard
    pairs = []
    for i in range(300):
        a = ids[i, :300].copy()
        b = a.copy()
        span = rng.integers(0, 120)
        start = rng.integers(0, 300 - span + 1)
        b[start : start + span] = rng.choice(len(vocab), span, p=p)
        pairs.append((" ".join(vocab[a]), " ".join(vocab[b]), jaccard(a, b)))
    ours = MinHasher(128).signatures([x for pair in pairs for x in pair[:2]])
    errors: dict[str, list[float]] = {"crawlbelt": [], "datasketch": [], "rensa": []}
    for i, (text_a, text_b, truth) in enumerate(pairs):
        errors["crawlbelt"].append(np.mean(ours[2 * i] == ours[2 * i + 1]) - truth)
        ma, mb = datasketch.MinHash(num_perm=128), datasketch.MinHash(num_perm=128)
        ma.update_batch([s.encode() for s in shingle_strings(text_a)])
        mb.update_batch([s.encode() for s in shingle_strings(text_b)])
        errors["datasketch"].append(ma.jaccard(mb) - truth)
        ra, rb = rensa.RMinHash(128, 1), rensa.RMinHash(128, 1)
        ra.update(shingle_strings(text_a))
        rb.update(shingle_strings(text_b))
        errors["rensa"].append(ra.jaccard(rb) - truth)
    return {
        "docs_per_cpu_second_2000_words": {k: round(v) for k, v in results.items()},
        "estimate_rmse_128": {k: round(float(np.sqrt(np.mean(np.square(v)))), 4) for k, v in errors.items()},
        "estimate_bias_128": {k: round(float(np.mean(v)), 4) for k, v in errors.items()},
    }


def realhtml_benchmark() -> dict:
    """The duplicates the belt's dedup (configs/local.yaml's settings, embedded Ray on 1 CPU) finds among the
    main texts of ../shared/realhtml's ground truth, and the CPU time of the hashing pass over those texts
    (normalization, SHA-1 keys and signatures: `pipeline.passes.dedup._hash_batch`, batches of 256, this process)."""
    import ray

    from pipeline.passes import dedup
    from pipeline.config import RayConfig
    from pipeline.config.load import load_config
    from pipeline.engines.engine_ray import start_ray
    from stages.dedup import FORMAT, WHITE_SPACE, MinHasher

    truth = ROOT.parent / "shared" / "realhtml" / "ground_truth.jsonl"
    if not truth.exists():
        sys.exit(f"realhtml: {truth} is missing")
    texts = [json.loads(line).get("main_text") for line in truth.open(encoding="utf-8")]
    texts = [t for t in texts if t]
    table = pa.table(
        {"order": np.arange(len(texts), dtype=np.int64), "id": [f"page-{i}" for i in range(len(texts))], "text": texts}
    )
    config = load_config(str(ROOT / "configs" / "local.yaml")).dedup
    hasher = MinHasher(config.num_perm, config.shingle_words, config.seed)
    dedup._hash_batch(table.slice(0, 8), exact=True, hasher=hasher)  # compile the kernels outside the timing
    t = time.process_time()
    for start in range(0, len(texts), 256):
        dedup._hash_batch(table.slice(start, 256), exact=True, hasher=hasher)
    hashing = time.process_time() - t

    work = ROOT / "out" / "bench-dedup-realhtml"
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    start_ray(RayConfig(num_cpus=1, object_store_mb=512))
    (work / "filtered").mkdir()
    pq.write_table(table.append_column("stage", pa.nulls(len(texts), pa.string())), work / "filtered" / "texts.parquet")
    verdicts, _ = dedup.run(work / "filtered", config, work)
    ray.shutdown()
    stages = verdicts["stage"].to_pylist()
    wide_spaces = {chr(c) for first, last in WHITE_SPACE for c in range(first, last + 1)} - set(" \t\n\v\f\r\xa0")
    formats = {chr(c) for first, last in FORMAT for c in range(first, last + 1)}
    return {
        "texts": len(texts),
        "characters": sum(map(len, texts)),
        "hashing_cpu_seconds": round(hashing, 3),
        "texts_per_cpu_second": round(len(texts) / hashing),
        # texts that today's normalization reads differently from the older lowercase-and-ASCII-spaces one
        "texts_not_nfkc": sum(not unicodedata.is_normalized("NFKC", t) for t in texts),
        "texts_with_other_unicode_spaces": sum(not wide_spaces.isdisjoint(t) for t in texts),
        "texts_with_format_characters": sum(not formats.isdisjoint(t) for t in texts),
        "texts_casefold_not_lower": sum(t.casefold() != t.lower() for t in texts),
        "exact_duplicates": stages.count("exact_dedup"),
        "near_duplicates": stages.count("near_dedup"),
        "duplicates": sorted(zip(verdicts["order"].to_pylist(), verdicts["dup_of"].to_pylist(), stages)),
    }


def paragraph_corpus(n_docs: int, folder: Path, chunk: int = 10_000, seed: int = 11) -> int:
    """Documents of 3 to 8 paragraphs of 10 to 40 Zipf-drawn words, each also holding 0 to 3 boilerplate
    paragraphs drawn (Zipf again) from 2,000 templates, written as the filter pass leaves its files (one per
    `chunk` documents; `order` the file's index << 40, then the row). Returns the paragraphs written."""
    rng = np.random.default_rng(seed)
    vocab = vocabulary(rng)
    cdf = np.cumsum(zipf(len(vocab)))
    templates = [" ".join(vocab[np.searchsorted(cdf, rng.random(int(rng.integers(6, 30))))]) for _ in range(2000)]
    popularity = 1.0 / np.arange(1, len(templates) + 1)
    popularity /= popularity.sum()
    folder.mkdir(parents=True)
    paragraphs = 0
    for file, start in enumerate(range(0, n_docs, chunk)):
        rows = min(chunk, n_docs - start)
        own = rng.integers(3, 9, rows)
        lengths = rng.integers(10, 41, int(own.sum()))
        words = vocab[np.searchsorted(cdf, rng.random(int(lengths.sum())))]
        cuts = np.concatenate([[0], np.cumsum(lengths)])
        texts, at = [], 0
        for d in range(rows):
            mine = [" ".join(words[cuts[i] : cuts[i + 1]]) for i in range(at, at + own[d])]
            at += own[d]
            for t in rng.choice(len(templates), int(rng.integers(0, 4)), p=popularity):
                mine.insert(int(rng.integers(0, len(mine) + 1)), templates[t])
            paragraphs += len(mine)
            texts.append("\n".join(mine))
        orders = (np.int64(file) << 40) + np.arange(rows, dtype=np.int64)
        table = pa.table(
            {"order": orders, "id": [f"doc-{start + i}" for i in range(rows)], "text": texts}
        ).append_column("stage", pa.nulls(rows, pa.string()))
        pq.write_table(table, folder / f"file-{file:06d}.parquet", row_group_size=10_000)
    return paragraphs


def paragraphs_benchmark(n_docs: int, shards: int) -> dict:
    """Paragraph dedup's steps 1 and 2 (pipeline/passes/paragraphs.py, on an embedded Ray of 2 CPUs) and step 3 (the
    edit finalize makes, in this process), with an exact set, with our Bloom filter (sized from the units
    counted, at 0.001), and with dolma's settings (its example's rate, 0.0001, sized from the documents, as
    dolma sizes its filter by `estimated_doc_count` whatever it dedups); the Bloom filters' false positives
    counted against the exact set's verdicts."""
    import shutil

    import ray

    from pipeline.passes import paragraphs
    from pipeline.config import ParagraphDedupConfig, RayConfig
    from pipeline.engines.engine_ray import start_ray

    work = ROOT / "out" / f"bench-paragraphs-{n_docs}"
    shutil.rmtree(work, ignore_errors=True)
    t = time.perf_counter()
    written = paragraph_corpus(n_docs, work / "filtered")
    result: dict[str, object] = {
        "docs": n_docs,
        "paragraphs": written,
        "corpus_seconds": round(time.perf_counter() - t, 1),
    }
    start_ray(RayConfig(num_cpus=2, object_store_mb=1024))
    no_verdicts = pa.table({"order": pa.array([], pa.int64())})
    variants = {
        "exact set": ParagraphDedupConfig(enabled=True, filter="exact"),
        "Bloom, 0.001 of the units counted": ParagraphDedupConfig(enabled=True, false_positive_rate=0.001),
        "Bloom, dolma's settings (0.0001 of the documents)": ParagraphDedupConfig(
            enabled=True, false_positive_rate=0.0001, expected=n_docs
        ),
    }
    # once untimed: the workers' imports and the kernels' compilation
    paragraphs.run(work / "filtered", no_verdicts, variants["exact set"], shards, work)
    removed_by: dict[str, set] = {}
    for name, settings in variants.items():
        memory = PeakMemory()
        cpu_before, t = _cpu_seconds(), time.perf_counter()
        stats = paragraphs.run(work / "filtered", no_verdicts, settings, shards, work)
        wall, cpu = time.perf_counter() - t, _cpu_seconds() - cpu_before
        peak = memory.stop()
        seen = pq.read_table(work / "paragraphs" / "seen", columns=["order", "para"])
        removed_by[name] = set(zip(seen["order"].to_pylist(), seen["para"].to_pylist()))
        row = {
            "steps_1_2_wall_s": round(wall, 1),
            "steps_1_2_cpu_s": round(cpu, 1),
            "peak_pss_gb_all_processes": round(peak, 2),
            "largest_worker_pss_gb": round(memory.largest / 2**30, 2),
            "filter_bytes_per_shard": stats["bytes_per_shard"],
            "units": stats["units"],
            "paragraphs_removed": len(removed_by[name]),
            "estimated_false_positive_rate": stats["estimated_false_positive_rate"],
        }
        if name == "exact set":  # step 3 once: it does not depend on the filter
            settings_3 = {"folder": str(work / "paragraphs"), "ngram": None, "threshold": 0.8, "min_words": 50}
            t3 = time.process_time()
            chars = removed_chars = 0
            for path in sorted((work / "filtered").glob("file-*.parquet")):
                rows = pq.read_table(path)
                rows = rows.append_column("reason", pa.nulls(rows.num_rows, pa.string()))
                rows = rows.append_column("detail", pa.nulls(rows.num_rows, pa.string()))
                _, counts = paragraphs.edit(rows, int(path.stem[5:]), settings_3)
                chars, removed_chars = chars + counts["chars"], removed_chars + counts["chars_removed"]
            row["step_3_cpu_s"] = round(time.process_time() - t3, 1)
            row["share_of_chars_removed"] = round(removed_chars / chars, 4)
            row["docs_per_cpu_second"] = round(n_docs / (cpu + row["step_3_cpu_s"]))
        else:
            row["false_positives"] = len(removed_by[name] - removed_by["exact set"])
            row["missed"] = len(removed_by["exact set"] - removed_by[name])
            row["docs_per_cpu_second_steps_1_2"] = round(n_docs / cpu)
        result[name] = row
        print(json.dumps({name: row}), flush=True)
    ray.shutdown()
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["signatures", "corpus", "all", "realhtml", "paragraphs"])
    parser.add_argument("--docs", type=int, default=250_000)
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--object-store-mb", type=int, default=2048)
    args = parser.parse_args()
    if args.what == "signatures":
        print(json.dumps(signatures_benchmark(), indent=2))
    elif args.what == "paragraphs":
        print(json.dumps(paragraphs_benchmark(args.docs, args.shards)))
    elif args.what == "realhtml":
        print(json.dumps(realhtml_benchmark()))
    elif args.what == "corpus":
        print(json.dumps(run_corpus(args.docs, args.shards, args.object_store_mb)))
    else:
        print(json.dumps(signatures_benchmark(), indent=2), flush=True)
        for n in (250_000, 500_000, 1_000_000):  # a fresh process each, so peak memory is per scale point
            subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "corpus",
                    "--docs",
                    str(n),
                    "--shards",
                    str(args.shards),
                    "--object-store-mb",
                    str(args.object_store_mb),
                ],
                check=True,
            )


if __name__ == "__main__":
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    main()
