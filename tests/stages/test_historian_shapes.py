"""Issue 25: the historian files each fact under its own heading, in every shape, names in any case.

The category names come from the installed ``ops`` pack (``store.category_names()``
is what the built-in historian hands the parser).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from plugin_sdk import Store, resolve_pack
from plugin_sdk.model.tagged import parse_tagged

NAMES = list(resolve_pack("ops").categories)


def pairs(store: Store, reply: str) -> list[tuple[str, str]]:
    parsed = store.plugins.hook.historian_parse(store=store, reply=reply)
    assert parsed.malformed == []
    return [(f.category, f.text) for f in parsed.facts]


def test_a_headed_list_stops_at_the_next_heading(store):
    first, second = store.category_names()[:2]
    reply = f"## {first}\n- qa has 2 nodes\n## {second}\n- max_connections = 400"
    assert pairs(store, reply) == [(first, "qa has 2 nodes"), (second, "max_connections = 400")]


def test_a_headed_list_stops_at_a_bold_or_colon_heading_without_a_blank_line(store):
    first, second, third = store.category_names()[:3]
    reply = f"**{first}**\n- one fact here\n{second.lower()}:\n- two facts here\n# {third}\n- three"
    assert pairs(store, reply) == [
        (first, "one fact here"),
        (second, "two facts here"),
        (third, "three"),
    ]


def test_the_category_attribute_matches_case_insensitively_and_takes_the_store_spelling(store):
    name = store.category_names()[0]
    reply = f'<facts category="{name.lower()}">\n- Never restart db-2 at noon.\n</facts>'
    assert pairs(store, reply) == [(name, "Never restart db-2 at noon.")]
    [fact] = store.plugins.hook.historian_parse(store=store, reply=reply).facts
    admission = store.plugins.hook.historian_admit(store=store, fact=fact)
    assert admission.action == "write"  # admitted, not quarantined as an unknown name


def test_a_wrapper_tag_around_headed_lists_is_formatting(store):
    first, second = store.category_names()[:2]
    reply = f"<response>\n## {first}\n- one fact here\n## {second}\n- two facts here\n</response>"
    assert pairs(store, reply) == [(first, "one fact here"), (second, "two facts here")]


# -- property: any arrangement, names in any case, each fact under its own heading ---------

WORD = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8)
TEXT = st.lists(WORD, min_size=2, max_size=5).map(" ".join)


@st.composite
def spelled(draw: st.DrawFn) -> tuple[str, str]:
    """(the store's name, the name as a model might write it)."""
    name = draw(st.sampled_from(NAMES))
    flips = draw(st.lists(st.booleans(), min_size=len(name), max_size=len(name)))
    return name, "".join(c.swapcase() if flip else c for c, flip in zip(name, flips, strict=True))


SHAPES = ("hash", "bold", "colon", "facts", "tag", "labelled", "fence", "inline")


@st.composite
def section(draw: st.DrawFn) -> tuple[list[str], list[tuple[str, str]]]:
    """The lines of one section and the facts it holds."""
    name, written = draw(spelled())
    shape = draw(st.sampled_from(SHAPES))
    texts = draw(st.lists(TEXT, min_size=1, max_size=3))
    if shape == "inline":
        texts = texts[:1]
    bullet = draw(st.sampled_from(["- ", "* "]))
    items = [bullet + text for text in texts]
    if shape == "hash":
        lines = [f"{'#' * draw(st.integers(1, 4))} {written}", *items]
    elif shape == "bold":
        lines = [f"**{written}**", *items]
    elif shape == "colon":
        lines = [f"{written}:", *items]
    elif shape == "facts":
        lines = [f'<facts category="{written}">', *items, "</facts>"]
    elif shape == "tag":
        lines = [f"<{written}>", *items, f"</{written}>"]
    elif shape == "fence":
        lines = [f"```{written}", *items, "```"]
    elif shape == "labelled":
        lines = [f"{bullet}[{written}] {text}" for text in texts]
    else:
        lines = [f"<{written}>{texts[0]}</{written}>"]
    return lines, [(name, text) for text in texts]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(section(), st.booleans()), min_size=1, max_size=6))
def test_any_arrangement_files_each_fact_under_its_own_heading_and_loses_none(sections):
    lines: list[str] = []
    expected: list[tuple[str, str]] = []
    for (body, facts), blank in sections:
        lines += body + ([""] if blank else [])
        expected += facts
    parsed = parse_tagged("\n".join(lines), NAMES)
    assert [(f.category, f.text) for f in parsed.facts] == expected
    assert parsed.malformed == []
