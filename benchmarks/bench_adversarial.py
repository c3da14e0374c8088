"""Every text rule of the stages on text made to break backtracking, against the same rule on normal text.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_adversarial.py [--size 1000000] [--limit 60]

Each rule runs on SIZE characters of each pattern (runs of `:`, digits with separators, `(`, `'`, `@`, long
hosts, ...) and of normal prose, in a forked child killed after --limit seconds. It prints seconds per rule
and pattern and the ratio to normal text; a rule that is quadratic on a pattern shows a large ratio or a
timeout. docs/benchmarks.md has the figures.
"""

from __future__ import annotations

import argparse
import os
import pickle
import random
import select
import signal
import time
from collections.abc import Callable

from stages.c4 import c4_clean
from stages.decontaminate import match_text
from stages.dedup import MinHasher, normalize
from stages.english_split import sentences
from stages.fineweb import fineweb_rules
from stages.pii import pii_spans
from stages.quality import gopher_quality_rules, gopher_repetition_rules
from stages.url_filter import url_key
from stages.words import datatrove_words

SENTENCES = [
    "The committee met on Tuesday to review the budget for the next year.",
    "Members asked (politely) whether the 2.5% rise was needed; the chair said it was.",
    "Contact the office at office@example.org or call +1 415-555-0100 before noon.",
    "It's a long way to the station, isn't it? About 3.2 km, or 40 minutes on foot.",
    "Results: 14 of 20 samples passed, see https://example.com/report?id=7 for details.",
]


def prose(size: int, seed: int = 0) -> str:
    """Sentences in a random order with a running number in each, so that chunks vary as in a real page."""
    rng = random.Random(seed)
    parts: list[str] = []
    length = 0
    while length < size:
        parts.append(f"{rng.choice(SENTENCES)} ({len(parts)})\n")
        length += len(parts[-1])
    return "".join(parts)[:size]


PATTERNS: dict[str, str] = {
    "colons": ":",
    "digits and dots": "1.2.",
    "digits and separators": "12-34 ",
    "digits": "7",
    "parentheses": "(",
    "quotes": "'",
    "at signs": "@",
    "local parts": "a.b@",
    "long host": "ab.",
    "hex colons": "1a:",
    "dashes": "-",
    "brackets": "[",
    "one long word": "x",
    "dots and spaces": ". ",
    "newlines": "\n",
    "spaces": " ",
    "plus and digits": "+1 ",
}
_HASHER = MinHasher()
RULES: dict[str, Callable[[str], object]] = {
    "pii": pii_spans,
    "c4": c4_clean,
    "fineweb": fineweb_rules,
    "gopher quality": gopher_quality_rules,
    "gopher quality (datatrove words)": lambda text: gopher_quality_rules(text, words="datatrove"),
    "gopher repetition": gopher_repetition_rules,
    "datatrove words": datatrove_words,
    "sentences": sentences,
    "dedup normalize": lambda text: normalize([text]),
    "minhash": lambda text: _HASHER.signatures([text]),
    "decontamination words": lambda text: match_text([text]),
    "url key": lambda text: url_key("http://" + text.replace("\n", "") + "/path"),
}


def timed(rule: Callable[[str], object], text: str, limit: float) -> float | str | None:
    """CPU seconds `rule(text)` took in a forked child, its exception if it raised, None if it ran past `limit`
    (the child is killed)."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read)
        started = time.process_time()
        try:
            rule(text)
            result: float | str = time.process_time() - started
        except Exception as error:  # a rule that raises on the text is a finding too
            result = f"{type(error).__name__}: {error}"
        os.write(write, pickle.dumps(result))
        os._exit(0)
    os.close(write)
    ready, _, _ = select.select([read], [], [], limit)
    if not ready:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        os.close(read)
        return None
    data = os.read(read, 1024)
    os.close(read)
    os.waitpid(child, 0)
    return pickle.loads(data) if data else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="characters of each pattern")
    parser.add_argument("--limit", type=float, default=60.0, help="seconds before a run counts as a timeout")
    parser.add_argument("--rules", help="comma-separated rule names (default: all)")
    args = parser.parse_args()
    rules = {name: RULES[name] for name in args.rules.split(",")} if args.rules else RULES
    texts = {"normal prose": prose(args.size)}
    texts.update({name: (unit * (args.size // len(unit) + 1))[: args.size] for name, unit in PATTERNS.items()})
    worst: list[tuple[float, str, str]] = []
    for rule_name, rule in rules.items():
        normal = timed(rule, texts["normal prose"], args.limit)
        assert isinstance(normal, float), f"{rule_name} on normal prose: {normal}"
        print(f"{rule_name}: normal prose {normal:.3f} s")
        for pattern, text in texts.items():
            if pattern == "normal prose":
                continue
            seconds = timed(rule, text, args.limit)
            if isinstance(seconds, str):
                print(f"  {pattern:24} raised {seconds}")
                worst.append((float("inf"), rule_name, pattern))
                continue
            ratio = float("inf") if seconds is None else seconds / max(normal, 1e-9)
            shown = f"over {args.limit:.0f} s" if seconds is None else f"{seconds:.3f} s"
            print(f"  {pattern:24} {shown:>12}  {ratio:8.1f}x normal")
            worst.append((ratio, rule_name, pattern))
    print("worst:", ", ".join(f"{rule} on {pattern} {ratio:.1f}x" for ratio, rule, pattern in sorted(worst)[-5:]))


if __name__ == "__main__":
    main()
