"""The mixture sampler: the passes weights imply (crawl_sample.md's figures), whole passes plus a seeded
fraction, the repetition warning, and the same sample from the same seed."""

import numpy as np
import pytest

from stages.mixture import implied_passes, plan_mixture, repetition_warnings


def test_crawl_sample_mixture_figures():
    passes = implied_passes(
        {"web": 0.80, "wiki": 0.05, "code": 0.15},
        {"web": 900 * 10**9, "wiki": 20 * 10**9, "code": 150 * 10**9},
        1000 * 10**9,
    )
    assert {name: round(p, 2) for name, p in passes.items()} == {"web": 0.89, "wiki": 2.5, "code": 1.0}


def test_weights_are_shares_of_the_budget():
    # 8 : 0.5 : 1.5 is the same mixture as 0.80 : 0.05 : 0.15
    passes = implied_passes({"web": 8, "wiki": 0.5, "code": 1.5}, {"web": 900, "wiki": 20, "code": 150}, 1000)
    assert passes == pytest.approx({"web": 0.8889, "wiki": 2.5, "code": 1.0}, abs=1e-4)


def token_counts(n, seed=0):
    return np.random.default_rng(seed).integers(20, 400, n)


def test_same_figures_with_documents_drawn():
    """crawl_sample.md's mixture scaled down to documents: whole passes, then a fraction of a pass."""
    web, wiki, code = token_counts(900, 1), token_counts(40, 2), token_counts(300, 3)
    available = {"web": web.sum(), "wiki": wiki.sum(), "code": code.sum()}
    budget = int(sum(available.values()) * 1.3)
    _, draws = plan_mixture([("web", 0.80, web), ("wiki", 0.05, wiki), ("code", 0.15, code)], budget, seed=7)
    by_name = {d.name: d for d in draws}
    for name, weight, counts in (("web", 0.80, web), ("wiki", 0.05, wiki), ("code", 0.15, code)):
        d = by_name[name]
        target = round(weight * budget)
        assert d.passes == pytest.approx(target / counts.sum())
        # the sample reaches the target and overshoots it by less than one document
        assert target <= d.tokens_drawn < target + counts.max() and d.tokens_drawn == counts[d.draws].sum()
        times = np.bincount(d.draws, minlength=len(counts))
        whole = int(d.passes)
        assert times.min() == whole and times.max() <= whole + 1  # every document in each whole pass, once
    assert [d.name for d in draws] == ["web", "wiki", "code"]


def test_a_budget_that_needs_repetition_gets_its_passes_and_the_warning():
    counts = token_counts(50)
    budget = int(counts.sum() * 5.5)
    _, (draw,) = plan_mixture([("small", 1.0, counts)], budget, seed=1)
    assert draw.passes == pytest.approx(5.5)
    times = np.bincount(draw.draws, minlength=50)
    assert set(times) == {5, 6} and 0.3 < (times == 6).mean() < 0.7
    # whole passes come first, in document order; the sampled half pass last, also in document order
    assert list(draw.draws[:250]) == list(range(50)) * 5 and list(draw.draws[250:]) == sorted(draw.draws[250:])
    (line,) = repetition_warnings([draw], max_passes=4)
    assert "'small'" in line and "5.50 passes" in line and "max_passes = 4" in line
    assert repetition_warnings([draw], max_passes=6) == []


def test_no_budget_reads_each_source_once_in_order():
    counts = token_counts(30)
    budget, (draw,) = plan_mixture([("web", 1.0, counts)], None, seed=1)
    assert budget == counts.sum() and draw.passes == 1.0 and list(draw.draws) == list(range(30))


def test_same_seed_same_sample_other_seed_other_sample():
    sources = [("a", 1.0, token_counts(200, 1)), ("b", 3.0, token_counts(80, 2))]
    budget = 60_000
    first = [d.draws for d in plan_mixture(sources, budget, seed=3)[1]]
    again = [d.draws for d in plan_mixture(sources, budget, seed=3)[1]]
    other = [d.draws for d in plan_mixture(sources, budget, seed=4)[1]]
    assert all(np.array_equal(x, y) for x, y in zip(first, again))
    assert not all(np.array_equal(x, y) for x, y in zip(first, other))
    # a source's sample does not depend on which other sources are in the mixture
    alone = plan_mixture([sources[1]], round(budget * 3 / 4), seed=3)[1][0].draws
    assert np.array_equal(alone, first[1])


def test_empty_documents_are_never_drawn_and_an_empty_source_is_warned_about():
    counts = np.array([10, 0, 10, 0, 10])
    _, (draw, empty) = plan_mixture([("web", 1.0, counts), ("empty", 1.0, np.zeros(3, int))], 90, seed=1)
    assert set(draw.draws) == {0, 2, 4} and draw.tokens_drawn == 50  # 45 wanted: whole pass 30, then 20
    assert empty.passes is None and len(empty.draws) == 0
    (line,) = repetition_warnings([draw, empty], max_passes=4)
    assert "'empty'" in line and "no tokens" in line
