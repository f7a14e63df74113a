"""Strength and decay (``plugin_sdk/grid/strength.py``): the formulas against hand-computed values, and their properties.

strength(t)         = base_strength × 0.5^(Δt / effective_half_life) × retrieval_boost
                      × emotional_multiplier
reward_factor       = 1 + 0.5 × ((pos − neg) / (pos + neg + 1))
effective_half_life = half_life_days × reward_factor
retrieval_boost     = 1 + 0.1 × log2(retrieval_count + 1)
weight_temporal     = exp(−Δt / σ)
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plugin_sdk.grid.strength import (
    days_between,
    effective_half_life,
    retrieval_boost,
    reward_factor,
    strength,
    weight_temporal,
)

# Hand-computed values


@pytest.mark.parametrize(
    ("positive", "negative", "expected"),
    [
        (0, 0, 1.0),  # 1 + 0.5 × (0 / 1)
        (3, 1, 1.2),  # 1 + 0.5 × (2 / 5) = 1 + 0.2
        (1, 0, 1.25),  # 1 + 0.5 × (1 / 2)
        (0, 4, 0.6),  # 1 + 0.5 × (−4 / 5) = 1 − 0.4
        (9, 0, 1.45),  # 1 + 0.5 × (9 / 10)
        (0, 9, 0.55),  # 1 + 0.5 × (−9 / 10)
        (2, 2, 1.0),  # 1 + 0.5 × (0 / 5)
        (5, 2, 1.1875),  # 1 + 0.5 × (3 / 8) = 1 + 0.1875
    ],
)
def test_reward_factor(positive, negative, expected):
    assert reward_factor(positive, negative) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("half_life", "positive", "negative", "expected"),
    [
        (10, 0, 0, 10.0),  # 10 × 1
        (10, 3, 1, 12.0),  # 10 × 1.2
        (30, 0, 4, 18.0),  # 30 × 0.6
        (8, 1, 0, 10.0),  # 8 × 1.25
        (365, 9, 0, 529.25),  # 365 × 1.45
    ],
)
def test_effective_half_life(half_life, positive, negative, expected):
    assert effective_half_life(half_life, positive, negative) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        (0, 1.0),  # 1 + 0.1 × log2(1) = 1
        (1, 1.1),  # 1 + 0.1 × log2(2) = 1 + 0.1
        (3, 1.2),  # 1 + 0.1 × log2(4) = 1 + 0.2
        (7, 1.3),  # 1 + 0.1 × log2(8)
        (15, 1.4),  # 1 + 0.1 × log2(16)
        (1023, 2.0),  # 1 + 0.1 × log2(1024) = 1 + 1
    ],
)
def test_retrieval_boost(count, expected):
    assert retrieval_boost(count) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        # Untouched: nothing decays at Δt 0, every factor is 1.
        ({"base_strength": 1.0, "days": 0, "half_life_days": 10}, 1.0),
        # Half-life 10 days, Δt 10 days, no outcomes: 0.5^(10/10) = 0.5.
        ({"base_strength": 1.0, "days": 10, "half_life_days": 10}, 0.5),
        # Δt two half-lives: 0.5^2 = 0.25; base 4 -> 1.0.
        ({"base_strength": 4.0, "days": 20, "half_life_days": 10}, 1.0),
        # Half-life 10, Δt 10, pos 3 neg 1 -> reward 1 + 0.5 × (2/5) = 1.2, effective 12;
        # decay 0.5^(10/12) = 2^(−5/6) = 0.56123102415468651...; 3 retrievals -> boost 1.2;
        # negative (1.5); base 2:  2 × 2^(−5/6) × 1.2 × 1.5 = 3.6 × 2^(−5/6) = 2.0204316869568...
        (
            {
                "base_strength": 2.0,
                "days": 10,
                "half_life_days": 10,
                "positive": 3,
                "negative": 1,
                "retrieval_count": 3,
                "emotional_multiplier": 1.5,
            },
            2.0204316869568717,
        ),
        # Half-life 30, pos 0 neg 4 -> reward 0.6, effective 18; Δt 36 -> 0.5^2 = 0.25;
        # 7 retrievals -> 1.3; critical (2.0):  0.25 × 1.3 × 2.0 = 0.65.
        (
            {
                "base_strength": 1.0,
                "days": 36,
                "half_life_days": 30,
                "negative": 4,
                "retrieval_count": 7,
                "emotional_multiplier": 2.0,
            },
            0.65,
        ),
        # Half-life 8, pos 1 -> reward 1.25, effective 10; Δt 20 -> 0.25; 1 retrieval -> 1.1;
        # positive (1.3):  0.25 × 1.1 × 1.3 = 0.3575.
        (
            {
                "base_strength": 1.0,
                "days": 20,
                "half_life_days": 8,
                "positive": 1,
                "retrieval_count": 1,
                "emotional_multiplier": 1.3,
            },
            0.3575,
        ),
        # Half-life 365, Δt 365 × 3 = 1095: 0.5^3 = 0.125; 15 retrievals -> 1.4:  0.175.
        (
            {"base_strength": 1.0, "days": 1095, "half_life_days": 365, "retrieval_count": 15},
            0.175,
        ),
    ],
)
def test_strength_hand_computed(fields, expected):
    assert strength(**fields) == pytest.approx(expected, rel=1e-12)


def test_the_issue_example_reward_lengthens_the_half_life():
    # The same entity, 10 days untouched, half-life 10: with pos 3 neg 1 it decays as if
    # its half-life were 12, i.e. exactly like a neutral entity with half-life 12.
    rewarded = strength(base_strength=1.0, days=10, half_life_days=10, positive=3, negative=1)
    plain = strength(base_strength=1.0, days=10, half_life_days=12)
    assert rewarded == pytest.approx(plain, rel=1e-12)
    assert rewarded == pytest.approx(2 ** (-10 / 12), rel=1e-12)
    assert rewarded > strength(base_strength=1.0, days=10, half_life_days=10)


@pytest.mark.parametrize("days", [-1e6, -1.0, 0.0, 0.5, 10.0, 365.0, 1e6, math.inf])
def test_pinned_is_infinite_at_any_age(days):
    assert (
        strength(
            base_strength=0.1,
            days=days,
            half_life_days=0.01,
            negative=50,
            emotional_multiplier=1.0,
            pinned=True,
        )
        == math.inf
    )


@pytest.mark.parametrize(
    ("days", "sigma", "expected"),
    [
        (0, 30, 1.0),  # exp(0)
        (30, 30, math.exp(-1)),  # Δt = σ -> 1/e = 0.36787944117144233
        (60, 30, math.exp(-2)),  # Δt = 2σ
        (15, 30, 0.6065306597126334),  # exp(−0.5)
        (7, 14, 0.6065306597126334),  # exp(−7/14) = exp(−0.5)
        (365, 365, 0.36787944117144233),
    ],
)
def test_weight_temporal_hand_computed(days, sigma, expected):
    assert weight_temporal(days, sigma) == pytest.approx(expected, rel=1e-12)


def test_days_between_iso_strings_and_datetimes():
    start = "2026-01-01T00:00:00.000000+00:00"
    assert days_between(start, "2026-01-11T12:00:00.000000+00:00") == 10.5
    assert days_between(start, "2026-01-01T06:00:00.000000+00:00") == 0.25
    assert days_between("2026-01-11T00:00:00+00:00", start) == -10.0  # the caller clamps
    moment = datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert days_between(moment, moment + timedelta(days=3, hours=6)) == 3.25
    # Another zone: the same instant is 0 days apart.
    assert days_between(start, "2026-01-01T02:00:00.000000+02:00") == 0.0


# Negative Δt (a clock behind the data) counts as 0


@pytest.mark.parametrize("days", [-0.001, -1.0, -365.0])
def test_negative_days_count_as_zero(days):
    fields = {
        "base_strength": 1.7,
        "half_life_days": 10,
        "positive": 1,
        "negative": 2,
        "retrieval_count": 3,
        "emotional_multiplier": 1.3,
    }
    assert strength(days=days, **fields) == strength(days=0, **fields)
    assert strength(days=days, **fields) == pytest.approx(1.7 * 1.2 * 1.3, rel=1e-12)
    assert weight_temporal(days, 30) == 1.0


# Properties

days = st.floats(min_value=0, max_value=3650, allow_nan=False)
any_days = st.floats(min_value=-3650, max_value=3650, allow_nan=False)
half_lives = st.floats(min_value=0.5, max_value=1000, allow_nan=False)
bases = st.floats(min_value=0.01, max_value=100, allow_nan=False)
counts = st.integers(min_value=0, max_value=10_000)
multipliers = st.floats(min_value=0.1, max_value=5, allow_nan=False)
sigmas = st.floats(min_value=7, max_value=3650, allow_nan=False)


@st.composite
def entities(draw):
    return {
        "base_strength": draw(bases),
        "half_life_days": draw(half_lives),
        "positive": draw(st.integers(0, 500)),
        "negative": draw(st.integers(0, 500)),
        "retrieval_count": draw(counts),
        "emotional_multiplier": draw(multipliers),
    }


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(entities(), any_days, st.floats(min_value=0, max_value=3650, allow_nan=False))
def test_strength_non_increasing_in_days(entity, start, later):
    assert strength(days=start + later, **entity) <= strength(days=start, **entity)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(entities(), days, st.integers(0, 10_000))
def test_strength_non_decreasing_in_retrievals(entity, age, more):
    fewer = strength(days=age, **entity)
    entity["retrieval_count"] += more
    assert strength(days=age, **entity) >= fewer


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(entities(), days, st.integers(0, 500))
def test_strength_non_decreasing_in_positive_outcomes(entity, age, more):
    before = strength(days=age, **entity)
    entity["positive"] += more
    assert strength(days=age, **entity) >= before


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(entities(), days, st.integers(0, 500))
def test_strength_non_increasing_in_negative_outcomes(entity, age, more):
    before = strength(days=age, **entity)
    entity["negative"] += more
    assert strength(days=age, **entity) <= before


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_reward_factor_between_half_and_one_and_a_half(positive, negative):
    factor = reward_factor(positive, negative)
    assert 0.5 < factor < 1.5
    assert (factor > 1) == (positive > negative)
    assert (factor == 1) == (positive == negative)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(entities(), days)
def test_strength_positive_and_at_most_its_undecayed_value(entity, age):
    value = strength(days=age, **entity)
    undecayed = (
        entity["base_strength"]
        * retrieval_boost(entity["retrieval_count"])
        * entity["emotional_multiplier"]
    )
    assert 0 <= value <= undecayed  # 0 only by float underflow, thousands of half-lives on
    assert strength(days=0, **entity) == pytest.approx(undecayed, rel=1e-12)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(entities(), any_days)
def test_pinned_is_infinite_whatever_the_fields(entity, age):
    assert strength(days=age, pinned=True, **entity) == math.inf


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(days, sigmas)
def test_weight_temporal_in_zero_one(age, sigma):
    assert 0 < weight_temporal(age, sigma) <= 1


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(days, st.floats(min_value=0, max_value=3650, allow_nan=False), sigmas)
def test_weight_temporal_non_increasing_in_days(age, later, sigma):
    assert weight_temporal(age + later, sigma) <= weight_temporal(age, sigma)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(sigmas)
def test_weight_temporal_is_one_over_e_at_sigma(sigma):
    assert weight_temporal(sigma, sigma) == pytest.approx(math.exp(-1), rel=1e-12)
    assert weight_temporal(0, sigma) == 1.0


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=-3650, max_value=0, allow_nan=False), sigmas, entities())
def test_negative_days_count_as_zero_property(age, sigma, entity):
    assert weight_temporal(age, sigma) == 1.0
    assert strength(days=age, **entity) == strength(days=0, **entity)
