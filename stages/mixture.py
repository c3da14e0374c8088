"""The mixture sampler: how many passes over each source a weighted token budget implies, and which
documents are drawn to meet it. Plain numpy; no Ray.

Weights are shares of the budget D (normalized to sum to one), so source i gets w_i * D tokens and is
read epochs_i = w_i * D / N_i times, N_i being its tokens available. A source is drawn as whole passes
over all its documents plus, for the fraction of a pass left over, a sample of its documents chosen in
an order shuffled from the seed, taken until their tokens reach the fraction.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np


def implied_passes(weights: dict[str, float], available: dict[str, int], budget: int) -> dict[str, float | None]:
    """epochs_i = w_i * D / N_i with the weights normalized; None for a source with no tokens."""
    total = sum(weights.values())
    return {name: (weights[name] / total * budget / available[name]) if available[name] else None for name in weights}


@dataclass
class SourceDraw:
    """What the sampler took from one source. `draws` indexes the source's documents, in stream order."""

    name: str
    weight: float
    documents: int
    tokens_available: int
    tokens_target: int
    tokens_drawn: int
    passes: float | None  # implied: tokens_target / tokens_available
    draws: np.ndarray

    def row(self) -> dict:
        """The mixture table's row for this source."""
        return {
            "source": self.name,
            "weight": self.weight,
            "documents": self.documents,
            "tokens_available": self.tokens_available,
            "tokens_target": self.tokens_target,
            "tokens_drawn": self.tokens_drawn,
            "documents_drawn": int(len(self.draws)),
            "passes": None if self.passes is None else round(self.passes, 4),
        }


def source_rng(seed: int, name: str) -> np.random.Generator:
    """One generator per source, from the seed and the source's name: adding a source changes no other draw."""
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def draw_source(name: str, weight: float, share: float, tokens: np.ndarray, budget: int, seed: int) -> SourceDraw:
    """Whole passes over every document in order, then a seeded sample (kept in document order) for the rest.

    `tokens` holds each document's token count as packed (end-of-document token included); documents
    with none are never drawn.
    """
    tokens = np.asarray(tokens, dtype=np.int64)
    available = int(tokens.sum())
    target = int(round(share * budget))
    if available == 0:
        return SourceDraw(name, weight, len(tokens), 0, target, 0, None, np.empty(0, np.int64))
    whole, rest = divmod(target, available)
    present = np.flatnonzero(tokens)
    parts = [present] * whole
    if rest:
        order = source_rng(seed, name).permutation(present)
        reached = np.cumsum(tokens[order])
        take = int(np.searchsorted(reached, rest, side="left")) + 1  # the first prefix that reaches `rest`
        parts.append(np.sort(order[:take]))
    draws = np.concatenate(parts) if parts else np.empty(0, np.int64)
    return SourceDraw(
        name,
        weight,
        len(tokens),
        available,
        target,
        int(tokens[draws].sum()),
        target / available,
        draws.astype(np.int64),
    )


def plan_mixture(
    sources: list[tuple[str, float, np.ndarray]], budget: int | None, seed: int
) -> tuple[int, list[SourceDraw]]:
    """The budget used (None: every available token, so one source alone is read exactly once) and each
    source's draw, for (name, weight, per-document token counts) in config order."""
    available = {name: int(np.sum(tokens)) for name, _, tokens in sources}
    if budget is None:
        budget = sum(available.values())
    total_weight = sum(weight for _, weight, _ in sources)
    draws = [draw_source(name, weight, weight / total_weight, tokens, budget, seed) for name, weight, tokens in sources]
    return budget, draws


def repetition_warnings(draws: list[SourceDraw], max_passes: float) -> list[str]:
    """One line per source read more often than `max_passes`, or without tokens."""
    warnings = []
    for d in draws:
        if d.passes is None:
            warnings.append(f"source {d.name!r} has weight {d.weight} but no tokens: nothing drawn from it")
        elif d.passes is not None and d.passes > max_passes:
            warnings.append(
                f"source {d.name!r} is repeated {d.passes:.2f} passes, more than mixture.max_passes = {max_passes:g}"
            )
    return warnings
