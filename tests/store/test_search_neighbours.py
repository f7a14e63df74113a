"""Search's neighbour signal: how far it reaches in an episode, and the length prior."""

from __future__ import annotations

import pytest

from plugin_sdk import Store
from plugin_sdk.store.search.ranking import length_prior, set_setting

AT = "2026-05-02T10:00:00Z"


def write(store: Store, texts: list[str]) -> list[int]:
    items = [{"content": text, "category": "RESEARCH", "occurred_at": AT} for text in texts]
    return [result.id for result in store.memories.write_many(items)]


def ids(store: Store, query: str) -> list[int]:
    return [hit.memory.id for hit in store.memories.search(query)]


@pytest.mark.parametrize(
    ("reach", "far_hits", "found"), [(4, 10, True), (3, 10, True), (2, 10, False), (4, 0, False)]
)
def test_a_turn_three_away_from_the_match_is_found_within_the_reach(
    store: Store, reach: int, far_hits: int, found: bool
) -> None:
    set_setting(store, "neighbour_reach", reach)
    set_setting(store, "neighbour_far_hits", far_hits)  # 0: no match lends beyond 2
    *_, answer = write(
        store,
        [
            "Omar: the bakery is real, I signed the lease on the shop",
            "Lena: go on, tell me everything about it",
            "Omar: the renovation starts next week if all goes well",
            "Omar: it is going to be called Crumb and Co, Sofia came up with it",
        ],
    )
    assert (answer in ids(store, "What is the bakery's name?")) is found


def test_a_long_neighbour_takes_more_of_the_match_than_a_short_one(store: Store) -> None:
    short, _, long = write(
        store,
        [
            "Priscilla: Where?",
            "Jake: Dana and I set a date for the wedding, September 20th",
            "Jake: a vineyard up north, Stonebridge Estate, and you are invited obviously",
        ],
    )
    found = ids(store, "Tell me about the wedding")
    assert found.index(long) < found.index(short)
    set_setting(store, "neighbour_length", 0)  # length ignored: equal gains, the lower id first
    found = ids(store, "Tell me about the wedding")
    assert found.index(short) < found.index(long)


def test_the_length_prior_is_a_share_of_the_mean_length_capped_at_one() -> None:
    share = length_prior({1: 10, 2: 30, 3: 50, 4: 30}, 1.0)  # mean 30
    assert [share(i) for i in (1, 2, 3, 4)] == pytest.approx([1 / 3, 1.0, 1.0, 1.0])
    assert share(99) == 1.0  # length not read: the whole gain
    half = length_prior({1: 10, 2: 30, 3: 50, 4: 30}, 0.5)
    assert half(1) == pytest.approx(0.5 + 0.5 / 3)
    assert length_prior({1: 10, 2: 50}, 0.0)(1) == 1.0
    assert length_prior({}, 1.0)(1) == 1.0
