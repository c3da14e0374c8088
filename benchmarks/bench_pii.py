"""The `pii` stage scored on the labelled set of benchmarks/make_pii_set.py, and its speed against datatrove's
PIIFormatter.

    python benchmarks/make_pii_set.py && python benchmarks/bench_pii.py [--set out/pii_set.jsonl] [--datatrove PYTHON]

Scores, span level, per kind (email, ipv4, ipv6, phone), with the stage's default settings and again with
`mask_private_ips: true`:
- a found span is right when it is exactly a labelled span of its kind (start and end); one that overlaps a
  labelled span but is not it is a boundary error (counted against precision and, for the span it missed,
  recall); a found span inside an `ignore` region (natural phone candidates nobody checked) counts neither way;
- a labelled private or reserved address is a positive only with `mask_private_ips`; with the default it is
  a look-alike;
- look-alikes: for each `what`, how many there are and how many the stage masked (any found span
  overlapping one). Their masks are false positives in the precision figures too.

Speed: documents per CPU-second (time.process_time, one process) of PiiMasker.mask over the 1,484 ground-truth
main texts as they are (no planted items), best of three rounds; datatrove's PIIFormatter.format (e-mail and
IPv4 only: it has no IPv6 or phone finder) on the same texts in the datatrove venv, when --datatrove names its
Python. Exit status 2 when the set is missing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stages.pii import KINDS, PiiMasker, pii_spans  # noqa: E402

GROUND_TRUTH = ROOT.parent / "shared" / "realhtml" / "ground_truth.jsonl"
DATATROVE = ROOT / ".bench" / "datatrove-venv" / "bin" / "python"
ROUNDS = 3

DATATROVE_TIMING = """
import json, sys, time
from datatrove.pipeline.formatters import PIIFormatter
texts = [json.loads(line)["main_text"] or "" for line in open(sys.argv[1], encoding="utf-8")]
formatter = PIIFormatter()
best = None
for _ in range(int(sys.argv[2])):
    start = time.process_time()
    for text in texts:
        formatter.format(text)
    spent = time.process_time() - start
    best = spent if best is None else min(best, spent)
print(best)
"""


def overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def score(rows: list[dict], private_too: bool) -> tuple[dict, dict]:
    """({kind: Counter(true, found, right, by origin)}, {what: Counter(total, masked)})."""
    kinds: dict[str, Counter] = {kind: Counter() for kind in KINDS}
    lookalikes: dict[str, Counter] = {}
    for row in rows:
        found = pii_spans(row["text"], KINDS, private_too)
        positives = [s for s in row["spans"] if private_too or not s["private"]]
        negatives = [dict(s, what=f"{s['kind']} private") for s in row["spans"] if s["private"] and not private_too]
        negatives += row["lookalikes"]
        truth = {(s["start"], s["end"]): s for s in positives}
        for span in positives:
            kinds[span["kind"]]["true"] += 1
            kinds[span["kind"]][f"true {span['origin']}"] += 1
        for start, end, kind in found:
            if any(overlaps((start, end), tuple(region)) for region in row["ignore"]) and (start, end) not in truth:
                continue
            kinds[kind]["found"] += 1
            label = truth.get((start, end))
            if label is not None and label["kind"] == kind:
                kinds[kind]["right"] += 1
                kinds[kind][f"right {label['origin']}"] += 1
        for negative in negatives:
            counts = lookalikes.setdefault(negative["what"], Counter())
            counts["total"] += 1
            counts["masked"] += any(overlaps((negative["start"], negative["end"]), (s, e)) for s, e, _ in found)
    return kinds, lookalikes


def kind_table(kinds: dict) -> list[str]:
    lines = [
        "| kind | labelled (planted + natural) | found | right | precision | recall | recall planted | recall natural |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kind, c in kinds.items():
        natural = f"{c['right natural'] / c['true natural']:.3f}" if c["true natural"] else "-"
        lines.append(
            f"| {kind} | {c['true']} ({c['true planted']} + {c['true natural']}) | {c['found']} | {c['right']} | "
            f"{c['right'] / max(1, c['found']):.3f} | {c['right'] / max(1, c['true']):.3f} | "
            f"{c['right planted'] / max(1, c['true planted']):.3f} | {natural} |"
        )
    return lines


def lookalike_table(lookalikes: dict) -> list[str]:
    lines = ["| look-alike | in the set | masked |", "|---|---|---|"]
    lines += [f"| {what} | {c['total']} | {c['masked']} |" for what, c in sorted(lookalikes.items())]
    total, masked = sum(c["total"] for c in lookalikes.values()), sum(c["masked"] for c in lookalikes.values())
    lines.append(f"| all | {total} | {masked} ({masked / max(1, total):.1%}) |")
    return lines


def format_misses(rows: list[dict]) -> list[str]:
    """The planted formats (default settings) the stage does not find every time: format, found / planted."""
    planted: Counter[str] = Counter()
    right: Counter[str] = Counter()
    for row in rows:
        found = {(start, end) for start, end, _ in pii_spans(row["text"])}
        for span in row["spans"]:
            if span["origin"] == "planted" and not span["private"]:
                planted[span["format"]] += 1
                right[span["format"]] += (span["start"], span["end"]) in found
    lines = ["| format | found / planted |", "|---|---|"]
    return lines + [f"| {name} | {right[name]} / {n} |" for name, n in sorted(planted.items()) if right[name] < n]


def misses(rows: list[dict], limit: int = 40) -> list[str]:
    """The default settings' wrong spans and missed spans, for reading."""
    out = []
    for row in rows:
        found = {(s, e): k for s, e, k in pii_spans(row["text"])}
        truth = {(s["start"], s["end"]) for s in row["spans"] if not s["private"]}
        text = row["text"]
        for start, end in sorted(truth - set(found)):
            out.append(f"missed {text[start:end]!r}")
        for (start, end), kind in sorted(found.items()):
            if (start, end) not in truth and not any(overlaps((start, end), tuple(r)) for r in row["ignore"]):
                out.append(f"wrong {kind} {text[start:end]!r} in {text[max(0, start - 25) : end + 10]!r}")
    return out[:limit]


def throughput(texts: list[str]) -> float:
    masker = PiiMasker()
    best = min(_seconds(masker, texts) for _ in range(ROUNDS))
    return len(texts) / best


def _seconds(masker: PiiMasker, texts: list[str]) -> float:
    start = time.process_time()
    for text in texts:
        masker.mask(text)
    return time.process_time() - start


def datatrove_throughput(python: Path, texts: list[str]) -> float | None:
    if not python.exists():
        return None
    done = subprocess.run(
        [str(python), "-c", DATATROVE_TIMING, str(GROUND_TRUTH), str(ROUNDS)], capture_output=True, text=True
    )
    if done.returncode:
        print(done.stderr[-2000:], file=sys.stderr)
        return None
    return len(texts) / float(done.stdout.split()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", type=Path, default=ROOT / "out" / "pii_set.jsonl")
    parser.add_argument("--datatrove", type=Path, default=DATATROVE, help="the datatrove venv's python")
    parser.add_argument("--show-errors", action="store_true", help="print the default settings' errors")
    args = parser.parse_args()
    if not args.set.is_file() or not GROUND_TRUTH.is_file():
        print(f"missing {args.set} (python benchmarks/make_pii_set.py) or {GROUND_TRUTH}", file=sys.stderr)
        return 2
    rows = [json.loads(line) for line in args.set.open(encoding="utf-8")]
    for private_too in (False, True):
        kinds, lookalikes = score(rows, private_too)
        print(f"\nmask_private_ips: {str(private_too).lower()}, {len(rows)} pages\n")
        print("\n".join(kind_table(kinds)))
        if not private_too:
            print("\n".join(["", *lookalike_table(lookalikes), "", *format_misses(rows)]))
    if args.show_errors:
        print("\n".join(["", *misses(rows, limit=400)]))
    texts = [json.loads(line)["main_text"] or "" for line in GROUND_TRUTH.open(encoding="utf-8")]
    ours = throughput(texts)
    print(f"\nthroughput: pii stage {ours:,.0f} documents per CPU-second ({len(texts)} ground-truth texts)")
    theirs = datatrove_throughput(args.datatrove, texts)
    if theirs is not None:
        print(
            f"datatrove PIIFormatter (e-mail, IPv4): {theirs:,.0f} documents per CPU-second; ratio {ours / theirs:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
