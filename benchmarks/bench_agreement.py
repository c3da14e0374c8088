"""Agreement with datatrove: crawlbelt's `c4` and `fineweb` stages against datatrove 0.10.1's C4QualityFilter and
FineWebQualityFilter (default settings on both sides) on identical texts, with each side's throughput.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_agreement.py                  # ground truth + extracted texts
    PYTHONPATH=. .venv/bin/python benchmarks/bench_agreement.py --no-extracted   # the ground-truth texts only
    PYTHONPATH=. .venv/bin/python benchmarks/bench_agreement.py --differences diff.jsonl   # every disagreement
    PYTHONPATH=. .venv/bin/python benchmarks/bench_agreement.py --c4-sentences   # C4 with split_paragraph=False
    PYTHONPATH=. .venv/bin/python benchmarks/bench_agreement.py --bad-words [FILE ...]   # C4's bad-words filter too

Texts: the `main_text` of every page of ../shared/realhtml/ground_truth.jsonl, and (unless --no-extracted) the
texts crawlbelt's extract stage (configs/local.yaml's settings) gives on ../shared/realhtml/warc/*.warc.gz,
cached in .bench/agreement-extracted.jsonl. The same file of texts goes to both sides.

Datatrove runs in its own virtual environment (benchmarks/bench_filter.py makes it) in a subprocess; both sides
run pinned to one core, and a side's CPU time is `time.process_time` around its filter calls only, after a
warm-up (spaCy's tokenizer loads on datatrove's first call). Documents per CPU-second = texts / that time.
Reported: the share of texts with the same keep/reject verdict, for C4 the share of texts both keep whose
modified text is identical, and the disagreements by (ours, theirs) reason.

C4's bad-words filter (`--bad-words`): datatrove's C4BadWordsFilter downloads LDNOOBW's list when it first
runs; in the subprocess its download helper is pointed at a local file instead, the same file our `c4` stage
reads (`c4.bad_words_file`). With no FILE, two lists the script writes to .bench/: the English words of the
URL blocklist datatrove ships (datatrove/assets/banned_words.txt, taken from LDNOOBW; its `#` lines are
comments there and left out here) and STRESS_BAD_WORDS, common words and phrases chosen to fire often and to
try the whole-word match (punctuation inside and at the ends, non-ASCII letters). For each list: the filter
alone on the texts as they are (ours: `bad_words_pattern`; datatrove's: C4BadWordsFilter() with its defaults,
keep_fraction 0, documents without a language metadata field so its `en` default and word boundaries apply),
and the C4 stage with the list against C4QualityFilter followed by C4BadWordsFilter on its kept text, the
order datatrove's C4 and FineWeb pipelines use.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_filter import datatrove_python, pin  # noqa: E402  (benchmarks/ is no package)

SHARED = ROOT.parent / "shared" / "realhtml"
EXTRACTED_CACHE = ROOT / ".bench" / "agreement-extracted.jsonl"
# Words and phrases that real pages hold often, with the characters a whole-word match can get wrong.
STRESS_BAD_WORDS = [
    "sex", "kill", "killed", "drugs", "war", "dead", "hell", "damn", "gun", "nude", "breast", "bomb", "crime",
    "u.s.", "e-mail", "c++", "new york", "white house", "don't", "#1", "$", "naïve", "café", "straße", "müller",
    "москва", "россия", "été", "año",
]  # fmt: skip

# Runs inside the datatrove venv: reads the texts (JSONL), prints one JSON line per text, then the timings.
DATATROVE_RUNNER = textwrap.dedent(
    r"""
    import json, os, sys, time
    from datatrove.data import Document
    from datatrove.pipeline.filters import C4QualityFilter, FineWebQualityFilter

    texts = [json.loads(line)["text"] for line in open(sys.argv[1])]
    c4, fineweb = C4QualityFilter(split_paragraph=sys.argv[2] == "lines"), FineWebQualityFilter()
    for step in (c4, fineweb):  # warm-up: spaCy's English tokenizer loads on the first call
        step.filter(Document(text="The river carries sand to the sea. It builds a delta.", id="warm"))

    def verdict(result):
        return (True, None) if result is True else (False, result[1] if isinstance(result, tuple) else None)

    rows = [{} for _ in texts]
    seconds = {}
    for name, step in (("c4", c4), ("fineweb", fineweb)):
        started = time.process_time()
        for row, (i, text) in zip(rows, enumerate(texts)):
            doc = Document(text=text, id=str(i))
            keep, reason = verdict(step.filter(doc))
            row[name] = {"keep": keep, "reason": reason, "text": doc.text if name == "c4" and keep else None}
        seconds[name] = time.process_time() - started
    # off the clock: spaCy's counts the two filters depend on, to compare with stages/english_split.py's
    from datatrove.utils.text import split_into_sentences, split_into_words
    for row, text in zip(rows, texts):
        row["words"] = len(split_into_words(text))
        row["sentences"] = [len(split_into_sentences(line.strip())) for line in text.splitlines() if line.strip()]
    # C4's bad-words filter, on the texts as they are and on C4's kept text, with each local list in turn: its
    # download helper returns the list's path instead of fetching LDNOOBW's
    import datatrove.pipeline.filters.c4_filters as c4_filters
    from datatrove.pipeline.filters import C4BadWordsFilter
    for name, path in json.loads(sys.argv[3]).items():
        c4_filters.cached_asset_path_or_download = lambda *args, path=path, **kwargs: path
        bad_words = C4BadWordsFilter()
        for row, (i, text) in zip(rows, enumerate(texts)):
            keep, reason = verdict(bad_words.filter(Document(text=text, id=str(i))))
            row[f"bad_words {name}"] = {"keep": keep, "reason": reason}
            c4_row = row["c4"]
            if c4_row["keep"]:
                keep, reason = verdict(bad_words.filter(Document(text=c4_row["text"], id=str(i))))
                c4_row = {"keep": keep, "reason": reason}
            row[f"c4+bad_words {name}"] = {"keep": c4_row["keep"], "reason": c4_row["reason"]}
    for row in rows:
        print(json.dumps(row))
    print(json.dumps({"seconds": seconds}))
    """
)


def ground_truth_texts() -> list[dict]:
    rows = [json.loads(line) for line in open(SHARED / "ground_truth.jsonl", encoding="utf-8")]
    return [{"set": "ground truth", "id": row["page_id"], "text": row["main_text"]} for row in rows if row["main_text"]]


def extracted_texts() -> list[dict]:
    """The extract stage's texts on the real-page WARCs (configs/local.yaml's settings), cached."""
    if EXTRACTED_CACHE.exists():
        return [json.loads(line) for line in open(EXTRACTED_CACHE, encoding="utf-8")]
    import pyarrow.compute as pc

    from pipeline.config.load import load_config
    from pipeline.spec import DOCUMENT_STAGES
    from stages.warc_read import read_warc

    files = sorted(str(p) for p in (SHARED / "warc").glob("*.warc.gz"))
    config = load_config(str(ROOT / "configs" / "local.yaml"), inputs=files)
    build = DOCUMENT_STAGES["extract"].build
    assert build is not None  # extract is always built
    extract = build(config)
    rows = []
    for index, path in enumerate(files):
        for batch in read_warc(path, index, "realhtml"):
            batch = extract(batch)
            alive = batch.filter(pc.is_null(batch["stage"]))
            rows += [
                {"set": "extracted", "id": row["id"], "text": row["text"]}
                for row in alive.select(["id", "text"]).to_pylist()
                if row["text"]
            ]
    EXTRACTED_CACHE.parent.mkdir(exist_ok=True)
    EXTRACTED_CACHE.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return rows


def bad_word_lists(files: list[str]) -> dict[str, str]:
    """{name: path} of the bad-words lists to compare with: the FILEs given, else the two this script writes."""
    if files:
        return {Path(file).name: str(Path(file).resolve()) for file in files}
    assets = datatrove_python().parents[1] / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    banned = assets / "site-packages" / "datatrove" / "assets" / "banned_words.txt"
    written = {
        "datatrove-banned-words": [line for line in banned.read_text().splitlines() if not line.startswith("#")],
        "stress": STRESS_BAD_WORDS,
    }
    lists = {}
    for name, words in written.items():
        path = ROOT / ".bench" / f"bad-words-{name}.txt"
        path.write_text("".join(word + "\n" for word in words), encoding="utf-8")
        lists[name] = str(path)
    return lists


def run_ours(texts: list[str], split_paragraph: bool, bad_words: dict[str, str]) -> tuple[list[dict], dict[str, float]]:
    from stages.c4 import bad_words_pattern, c4_clean, read_bad_words
    from stages.fineweb import fineweb_rules

    rows: list[dict] = [{} for _ in texts]
    seconds = {}
    started = time.process_time()
    for row, text in zip(rows, texts):
        kept, broken = c4_clean(text, split_paragraph=split_paragraph)
        row["c4"] = {"keep": not broken, "reason": ",".join(broken) or None, "text": None if broken else kept}
    seconds["c4"] = time.process_time() - started
    started = time.process_time()
    for row, text in zip(rows, texts):
        broken = fineweb_rules(text)
        row["fineweb"] = {"keep": not broken, "reason": ",".join(broken) or None}
    seconds["fineweb"] = time.process_time() - started
    for name, path in bad_words.items():
        pattern = bad_words_pattern(read_bad_words(path))
        for row, text in zip(rows, texts):
            found = pattern.search(text.lower()) is not None
            row[f"bad_words {name}"] = {"keep": not found, "reason": "bad_words" if found else None}
            broken = c4_clean(text, split_paragraph=split_paragraph, bad_words=pattern)[1]
            row[f"c4+bad_words {name}"] = {"keep": not broken, "reason": ",".join(broken) or None}
    return rows, seconds


def run_datatrove(path: Path, split_paragraph: bool, bad_words: dict[str, str]) -> tuple[list[dict], dict[str, float]]:
    env = {"PYTHONPATH": "", "OMP_NUM_THREADS": "1", "LOGURU_LEVEL": "WARNING", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [
            str(datatrove_python()),
            "-c",
            DATATROVE_RUNNER,
            str(path),
            "lines" if split_paragraph else "sentences",
            json.dumps(bad_words),
        ],  # on our core: affinity is inherited
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
        raise SystemExit(f"bench_agreement: the datatrove run failed (exit {done.returncode})")
    *rows, timings = [json.loads(line) for line in done.stdout.splitlines()]
    return rows, timings["seconds"]


def split_agreement(texts: list[str], theirs: list[dict]) -> dict:
    """How often stages/english_split.py counts as spaCy does: words per text, sentences per non-blank line."""
    from stages.english_split import count_sentences, count_words

    lines = same_lines = same_words = 0
    ratios = []
    for text, row in zip(texts, theirs):
        words = count_words(text)
        same_words += words == row["words"]
        ratios.append(words / max(row["words"], 1))
        counts = [count_sentences(line.strip()) for line in text.splitlines() if line.strip()]
        lines += len(counts)
        same_lines += sum(a == b for a, b in zip(counts, row["sentences"]))
    ratios.sort()
    return {
        "texts": len(texts),
        "same_words": same_words,
        "word_ratio_1_99": (ratios[len(ratios) // 100], ratios[-(len(ratios) // 100) - 1]),
        "lines": lines,
        "same_sentences": same_lines,
    }


def compare(docs: list[dict], ours: list[dict], theirs: list[dict]) -> dict:
    """Per text set and filter: texts, same verdict, kept by both, same modified text, disagreements."""
    figures: dict = {}
    for name in ours[0]:
        for subset in sorted({doc["set"] for doc in docs}) + ["all"]:
            picked = [i for i, doc in enumerate(docs) if subset in ("all", doc["set"])]
            same = [i for i in picked if ours[i][name]["keep"] == theirs[i][name]["keep"]]
            both_kept = [i for i in same if ours[i][name]["keep"]]
            figures[(name, subset)] = {
                "texts": len(picked),
                "same_verdict": len(same),
                "kept_by_both": len(both_kept),
                "same_text": sum(ours[i][name].get("text") == theirs[i][name].get("text") for i in both_kept),
                "kept_ours": sum(ours[i][name]["keep"] for i in picked),
                "kept_theirs": sum(theirs[i][name]["keep"] for i in picked),
                "differences": Counter(
                    (ours[i][name]["reason"] or "kept", theirs[i][name]["reason"] or "kept")
                    for i in picked
                    if i not in set(same)
                ),
            }
    return figures


def report(figures: dict, ours_s: dict, theirs_s: dict, n: int) -> str:
    lines = [
        "| filter | texts | same verdict | kept (ours / datatrove) | kept by both, same text |",
        "|---|---|---|---|---|",
    ]
    for (name, subset), f in figures.items():
        text = f"{f['same_text']} of {f['kept_by_both']}" if name == "c4" else "(no text change)"
        lines.append(
            f"| {name}, {subset} | {f['texts']} | {f['same_verdict']} ({f['same_verdict'] / f['texts']:.2%}) | "
            f"{f['kept_ours']} / {f['kept_theirs']} | {text} |"
        )
    lines += ["", "| filter | ours, docs per CPU-s | datatrove, docs per CPU-s | ratio |", "|---|---|---|---|"]
    for name in ("c4", "fineweb"):
        mine, theirs = n / ours_s[name], n / theirs_s[name]
        lines.append(f"| {name} | {mine:,.0f} | {theirs:,.0f} | {mine / theirs:.1f}x |")
    lines += ["", "Disagreements (ours, datatrove's reason):"]
    for (name, subset), f in figures.items():
        if subset == "all":
            for (mine, theirs), count in f["differences"].most_common():
                lines.append(f"- {name}: {count} x ({mine}, {theirs})")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-extracted", action="store_true", help="the ground-truth texts only")
    parser.add_argument("--cpu", type=int, default=None, help="core to pin both sides to (default: the last one)")
    parser.add_argument("--c4-sentences", action="store_true", help="C4 on sentences (split_paragraph=False)")
    parser.add_argument("--differences", metavar="FILE", help="write every disagreement (text and both verdicts)")
    parser.add_argument(
        "--bad-words", nargs="*", metavar="FILE", help="compare C4's bad-words filter too, with these lists (none: two)"
    )
    args = parser.parse_args(argv)

    docs = ground_truth_texts() + ([] if args.no_extracted else extracted_texts())
    texts = [doc["text"] for doc in docs]
    EXTRACTED_CACHE.parent.mkdir(exist_ok=True)
    shared = ROOT / ".bench" / "agreement-texts.jsonl"
    shared.write_text("".join(json.dumps({"text": text}) + "\n" for text in texts), encoding="utf-8")
    core = pin(args.cpu)
    lists = bad_word_lists(args.bad_words) if args.bad_words is not None else {}
    theirs, theirs_s = run_datatrove(shared, not args.c4_sentences, lists)
    ours, ours_s = run_ours(texts, not args.c4_sentences, lists)
    figures = compare(docs, ours, theirs)
    print(f"{len(texts)} texts, pinned to core {core}, {time.strftime('%Y-%m-%d')}\n")
    print(report(figures, ours_s, theirs_s, len(texts)))
    split = split_agreement(texts, theirs)
    low, high = split["word_ratio_1_99"]
    print(
        f"\nEnglish split against spaCy: the same word count on {split['same_words']} of {split['texts']} texts "
        f"(ours / spaCy's from {low:.3f} to {high:.3f} between the 1st and 99th percentile); the same sentence "
        f"count on {split['same_sentences']} of {split['lines']} non-blank lines "
        f"({split['same_sentences'] / split['lines']:.2%})"
    )
    if args.differences:
        with open(args.differences, "w", encoding="utf-8") as out:
            for doc, mine, them in zip(docs, ours, theirs):
                for name in mine:
                    if mine[name]["keep"] != them[name]["keep"] or (
                        name == "c4" and mine[name]["keep"] and mine[name]["text"] != them[name]["text"]
                    ):
                        out.write(json.dumps({**doc, "filter": name, "ours": mine[name], "datatrove": them[name]}))
                        out.write("\n")


if __name__ == "__main__":
    main()
