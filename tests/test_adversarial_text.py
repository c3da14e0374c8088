"""Every text rule of the stages ends in linear time on text made to break backtracking (issue 25): runs of
`:`, digits with separators, `(`, `'`, `@`, long hosts. Before, several took minutes on 256 KB (the datatrove
word splitter peeled one bracket at a time off a copy of the rest; the IPv6 pattern looked along a whole run
of colons from every colon). Each rule runs in a forked child that must finish within a deadline hundreds of
times what the rule needs now, so the test cannot fail for a slow machine, only for a quadratic rule;
benchmarks/bench_adversarial.py measures the times."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable

import pytest

from stages.c4 import c4_clean
from stages.decontaminate import match_text
from stages.dedup import normalize
from stages.english_split import sentences
from stages.fineweb import fineweb_rules
from stages.pii import PiiMasker
from stages.quality import gopher_quality_rules, gopher_repetition_rules
from stages.url_filter import url_key
from stages.words import datatrove_words

SIZE = 256 * 1024
DEADLINE_S = 120  # now at most about 1 s each here; quadratic rules took minutes on a fraction of this
UNITS = [":", "1.2.", "12-34 ", "7", "(", "'", "@", "a.b@", "ab.", "1a:", "-", "[", "x", ". ", "\n", "+1 ", "::1:"]
RULES: dict[str, Callable[[str], object]] = {
    "pii": lambda text: PiiMasker().mask(text),
    "c4": c4_clean,
    "fineweb": fineweb_rules,
    "gopher quality": lambda text: gopher_quality_rules(text, words="datatrove"),
    "gopher repetition": gopher_repetition_rules,
    "datatrove words": datatrove_words,
    "sentences": sentences,
    "dedup normalize": lambda text: normalize([text]),
    "decontamination words": lambda text: match_text([text]),
    "url key": lambda text: url_key("http://" + text.replace("\n", "") + "/path"),
}


def _run_all(name: str, done) -> None:
    for i, unit in enumerate(UNITS):
        RULES[name]((unit * (SIZE // len(unit) + 1))[:SIZE])
        done.value = i + 1


@pytest.mark.parametrize("name", RULES)
def test_each_text_rule_ends_in_linear_time_on_adversarial_text(name):
    context = multiprocessing.get_context("fork")
    done = context.Value("i", 0)
    child = context.Process(target=_run_all, args=(name, done))
    child.start()
    child.join(DEADLINE_S)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail(f"{name} ran past {DEADLINE_S} s on {SIZE:,} characters of {UNITS[done.value]!r}")
    assert child.exitcode == 0 and done.value == len(UNITS), f"{name} failed on {UNITS[done.value]!r}"
