"""Extraction speed and quality, end to end: our WARC reader, our charset decoding, then each extractor,
scored against the ground truth in ../shared/realhtml (1,484 real pages from seven public benchmarks).

    python benchmarks/bench_extract.py [--methods trafilatura,trafilatura:fast,resiliparse] [--limit N]
                                    [--held-out-threshold] [--held-out-model]

Pages: every record of warc/*.warc.gz, read with stages.warc_read.read_warc and decoded with
stages.extract.decode_html, as the pipeline does. A page the pipeline would reject before extraction
(too large) counts as an empty extraction.

Methods: an `extract.method` value (trafilatura, resiliparse, resiliparse-clean, resiliparse-blocks,
trafilatura+resiliparse), with
`:fast` for trafilatura's `fast=True`; every other setting is the stage's default (favor balanced,
tables on, comments off, 5 s time limit).

Quality, over the pages whose ground truth has `main_text` (all datasets but trafilatura_eval):
- tokens: the lowercased text split into word tokens: runs of letters/digits (regex \\w+, so
  punctuation, bullets and markup leftovers are not tokens), except that each CJK ideograph, kana or
  hangul syllable is a token of its own (Chinese and Japanese do not separate words with spaces);
- per page, over the multisets of tokens (a token counts as often as it occurs, overlap = sum over
  tokens of min(count extracted, count expected)): precision = overlap / extracted tokens,
  recall = overlap / expected tokens, F1 = their harmonic mean; an empty extraction scores 0 on all three;
- the table gives the mean over pages, per dataset and overall (every page weighs the same).

Snippets, trafilatura_eval (ground truth `with` / `without` snippets): a snippet is present when it is a
substring of the extracted text, both with white space collapsed to single spaces (case kept, as in
trafilatura's own evaluation). Accuracy = (`with` snippets present + `without` snippets absent) / all
snippets, pooled over the pages.

Speed: pages per CPU-second of extraction alone: time.process_time around Extract.extract_decoded
(everything the stage does after decoding, time limit included), summed over all pages; reading and
decoding are outside it. One process, one thread: one core.

resiliparse-blocks is a model trained on the six datasets with a main text: its F1 in the main tables is
in sample. --held-out-model adds the honest figure: for each of the six datasets, a model trained by
benchmarks/train_extractor.py on the other five, scored there, next to every measured method's F1 on the same
pages (trafilatura_eval's snippets are never trained on, so the main table's snippet accuracy is held out).

Exit status 2 when ../shared/realhtml is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extract_pages import DEFAULT_DIR, load_pages, make_stage, mean, prf, snippets, tokens  # noqa: E402
from stages.extract import MIN_LINE_WORDS, Extract, drop_short_lines  # noqa: E402

DEFAULT_METHODS = (
    "trafilatura,trafilatura:fast,resiliparse,resiliparse-clean,resiliparse-blocks,trafilatura+resiliparse"
)


def run(method: str, pages: list[dict]) -> dict:
    stage = make_stage(method)
    stage.load()
    warm = next(page["html"] for page in pages if page["html"])
    stage.extract_decoded(warm)  # trafilatura's first call loads more than later ones need
    reasons: Counter[str | None] = Counter()  # None: extracted
    scores: dict[str, list] = {}
    cpu, snippet_right, snippet_all = 0.0, 0, 0
    for page in pages:
        text = None
        if page["html"] is not None:
            started = time.process_time()
            text, reason, _ = stage.extract_decoded(page["html"])
            cpu += time.process_time() - started
            reasons[reason] += 1
        else:
            reasons["not_extracted"] += 1
        if page["expected"]:
            scores.setdefault(page["dataset"], []).append(prf(tokens(text), page["expected"]))
        if page["with_"] or page["without"]:
            right, count = snippets(text, page["with_"], page["without"])
            snippet_right += right
            snippet_all += count
    extracted = sum(page["html"] is not None for page in pages)
    return dict(
        method=method,
        cpu_s=cpu,
        pages=extracted,
        pages_per_cpu_s=extracted / cpu if cpu else None,
        scores=scores,
        snippet_accuracy=snippet_right / snippet_all if snippet_all else None,
        snippets=snippet_all,
        reasons={str(k): v for k, v in reasons.items()},
    )


def report(results: list[dict]) -> str:
    datasets = sorted({d for r in results for d in r["scores"]})
    lines = [
        "| method | pages/CPU-s | precision | recall | F1 | snippet accuracy | empty | timeout/error |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        every = [s for d in datasets for s in r["scores"].get(d, [])]
        accuracy = "-" if r["snippet_accuracy"] is None else f"{r['snippet_accuracy']:.3f}"
        lines.append(
            f"| {r['method']} | {r['pages_per_cpu_s']:.0f} | {mean([s[0] for s in every]):.3f} | "
            f"{mean([s[1] for s in every]):.3f} | {mean([s[2] for s in every]):.3f} | {accuracy} | "
            f"{r['reasons'].get('extract:empty', 0)} | "
            f"{r['reasons'].get('extract:timeout', 0)}/{r['reasons'].get('extract:error', 0)} |"
        )
    counts = {d: len(results[0]["scores"].get(d, [])) for d in datasets}
    lines += [
        "",
        "Mean token F1 per dataset (pages with main_text):",
        "",
        "| method | " + " | ".join(f"{d} ({counts[d]})" for d in datasets) + f" | overall ({sum(counts.values())}) |",
        "|---|" + "---:|" * (len(datasets) + 1),
    ]
    for r in results:
        every = [s[2] for d in datasets for s in r["scores"].get(d, [])]
        lines.append(
            f"| {r['method']} | "
            + " | ".join(f"{mean([s[2] for s in r['scores'].get(d, [])]):.3f}" for d in datasets)
            + f" | {mean(every):.3f} |"
        )
    return "\n".join(lines)


def held_out_threshold(pages: list[dict], thresholds=range(1, 11)) -> str:
    """resiliparse-clean's short-line threshold scored on pages it was not chosen on: for each dataset, the
    threshold with the best mean F1 over the other datasets' pages, scored on this dataset's pages."""
    extract = Extract(method="resiliparse")
    scored = [p for p in pages if p["html"] is not None and p["expected"]]
    raw = [extract._resiliparse(p["html"], alt_texts=False) for p in scored]  # what resiliparse-clean cleans
    f1 = {
        t: [prf(tokens(drop_short_lines(text, t)), p["expected"])[2] for text, p in zip(raw, scored)]
        for t in thresholds
    }
    datasets = sorted({p["dataset"] for p in scored})
    lines = [
        "| held-out dataset | pages | threshold chosen on the others | F1 there | F1 at the default |",
        "|---|---:|---:|---:|---:|",
    ]
    held_out, default = [], []
    for dataset in datasets:
        inside = [i for i, p in enumerate(scored) if p["dataset"] == dataset]
        others = [i for i, p in enumerate(scored) if p["dataset"] != dataset]
        chosen = max(thresholds, key=lambda t: (mean([f1[t][i] for i in others]), -t))
        held_out += [f1[chosen][i] for i in inside]
        default += [f1[MIN_LINE_WORDS][i] for i in inside]
        lines.append(
            f"| {dataset} | {len(inside)} | {chosen} | {mean([f1[chosen][i] for i in inside]):.3f} | "
            f"{mean([f1[MIN_LINE_WORDS][i] for i in inside]):.3f} |"
        )
    lines.append(f"| all ({len(scored)} pages) | | | **{mean(held_out):.3f}** | {mean(default):.3f} |")
    best = max(thresholds, key=lambda t: mean(f1[t]))
    lines += [
        "",
        "In-sample mean F1 per threshold: "
        + ", ".join(f"{t}: {mean(f1[t]):.3f}" for t in thresholds)
        + f" (best {best}, default {MIN_LINE_WORDS})",
    ]
    return "\n".join(lines)


def held_out_model(pages: list[dict], results: list[dict]) -> str:
    """resiliparse-blocks trained leaving each dataset out (benchmarks/train_extractor.py), per dataset, next to
    the methods measured in this run."""
    from train_extractor import held_out, prepare

    scored = held_out(prepare(pages))
    datasets = sorted(scored)
    every = [x for d in datasets for x in scored[d][1]]
    lines = [
        "| method | " + " | ".join(f"{d} ({len(scored[d][1])})" for d in datasets) + f" | overall ({len(every)}) |",
        "|---|" + "---:|" * (len(datasets) + 1),
    ]
    for r in results:
        name = r["method"] + (" (in sample)" if r["method"] == "resiliparse-blocks" else "")
        lines.append(
            f"| {name} | "
            + " | ".join(f"{mean([s[2] for s in r['scores'].get(d, [])]):.3f}" for d in datasets)
            + f" | {mean([s[2] for d in datasets for s in r['scores'].get(d, [])]):.3f} |"
        )
    lines.append(
        "| **resiliparse-blocks, held out** | "
        + " | ".join(f"**{mean(scored[d][1]):.3f}**" for d in datasets)
        + f" | **{mean(every):.3f}** |"
    )
    lines += ["", "Threshold chosen on the other five: " + ", ".join(f"{d} {scored[d][0]:.2f}" for d in datasets)]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--methods", default=DEFAULT_METHODS, help=f"comma-separated methods (default {DEFAULT_METHODS})"
    )
    parser.add_argument("--limit", type=int, default=None, help="at most this many pages per dataset")
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DIR, help="the realhtml folder (default ../shared/realhtml)"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument(
        "--held-out-threshold",
        action="store_true",
        help="also score resiliparse-clean's short-line threshold chosen leaving each dataset out",
    )
    parser.add_argument(
        "--held-out-model",
        action="store_true",
        help="also train resiliparse-blocks leaving each dataset out and score it on the one left out",
    )
    args = parser.parse_args(argv)
    if not (args.data / "ground_truth.jsonl").is_file() or not (args.data / "warc").is_dir():
        print(
            f"bench_extract: no benchmark data at {args.data} (expected ground_truth.jsonl and warc/); "
            "give --data or put ../shared/realhtml in place",
            file=sys.stderr,
        )
        return 2
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    for method in methods:
        make_stage(method)  # reject an unknown name before reading anything
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    started = time.monotonic()
    pages = load_pages(args.data, args.limit)
    print(f"{len(pages)} pages read and decoded in {time.monotonic() - started:.1f} s", flush=True)
    results = []
    for method in methods:
        started = time.monotonic()
        results.append(run(method, pages))
        print(
            f"{method}: {time.monotonic() - started:.1f} s wall, {results[-1]['cpu_s']:.1f} CPU-s, "
            f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
            flush=True,
        )
    print()
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if args.held_out_threshold:
        print()
        print(held_out_threshold(pages))
    if args.held_out_model:
        print()
        print(held_out_model(pages, results), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
