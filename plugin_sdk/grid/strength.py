"""Strength and decay: how fast what the store knows fades, and what holds it up.

Strength decays exponentially with a half-life (the shape of the forgetting
curve, https://en.wikipedia.org/wiki/Forgetting_curve), and three things
move it:

- **outcomes** stretch or shrink the half-life: ``reward_factor`` lies
  strictly between 0.5 (only negative outcomes) and 1.5 (only positive ones),
  and the ``+ 1`` keeps a single outcome from moving it far;
- **retrievals** lift strength with diminishing returns (``log2``): what is
  recalled is kept (the testing effect,
  https://en.wikipedia.org/wiki/Testing_effect);
- the **emotional multiplier** of the entity's emotional tag (the pack's
  ``[grid.emotions]``): what mattered is kept longer.

The half-life itself comes from the entity's grid cell (``policy.py``), so a
fleeting interaction and a standing instruction never fade alike.

::

    strength(t)         = base_strength
                          × 0.5 ^ (Δt / effective_half_life)
                          × retrieval_boost
                          × emotional_multiplier
    reward_factor       = 1 + 0.5 × ((pos − neg) / (pos + neg + 1))
    effective_half_life = half_life_days × reward_factor
    retrieval_boost     = 1 + 0.1 × log2(retrieval_count + 1)

A pinned entity has infinite strength and is exempt from decay. Δt is in days,
from the moment the entity was last seen (``last_seen_at``: created, or seen
again) to the store's clock; a retrieval raises the retrieval boost and an
outcome the reward factor, neither restarts the clock. A negative Δt (a clock
behind the data) counts as 0, so nothing is ever stronger than when it was
last seen.

Relations decay with ``weight_temporal = exp(−Δt / σ)``, σ in days per
relation type (the pack's ``[graph]`` table).
"""

from __future__ import annotations

import math
from datetime import datetime

SECONDS_PER_DAY = 86400.0


def reward_factor(positive: int, negative: int) -> float:
    return 1 + 0.5 * ((positive - negative) / (positive + negative + 1))


def effective_half_life(half_life_days: float, positive: int, negative: int) -> float:
    return half_life_days * reward_factor(positive, negative)


def retrieval_boost(retrieval_count: int) -> float:
    return 1 + 0.1 * math.log2(retrieval_count + 1)


def strength(
    *,
    base_strength: float,
    days: float,
    half_life_days: float,
    positive: int = 0,
    negative: int = 0,
    retrieval_count: int = 0,
    emotional_multiplier: float = 1.0,
    pinned: bool = False,
) -> float:
    """An entity's strength ``days`` after it was last reinforced (``inf`` if pinned)."""
    if pinned:
        return math.inf
    decay = 0.5 ** (max(0.0, days) / effective_half_life(half_life_days, positive, negative))
    return base_strength * decay * retrieval_boost(retrieval_count) * emotional_multiplier


def weight_temporal(days: float, sigma_days: float) -> float:
    """A relation's temporal weight ``days`` after it was last seen."""
    return math.exp(-max(0.0, days) / sigma_days)


def days_between(earlier: str | datetime, later: str | datetime) -> float:
    """Days from one ISO 8601 time (or datetime) to another."""
    start = datetime.fromisoformat(earlier) if isinstance(earlier, str) else earlier
    end = datetime.fromisoformat(later) if isinstance(later, str) else later
    return (end - start).total_seconds() / SECONDS_PER_DAY
