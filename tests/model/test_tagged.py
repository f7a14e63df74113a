"""The tagged reply format: ``parse_tagged`` on good, partly broken and arbitrary replies."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plugin_sdk.model.tagged import parse_tagged
from plugin_sdk.plugin.records import Fact, Malformed, ParsedReply

OUTSIDE = "text outside any <facts> block"


def pairs(parsed: ParsedReply) -> list[tuple[str, str]]:
    return [(fact.category, fact.text) for fact in parsed.facts]


# Well-formed replies


def test_well_formed_blocks_give_their_facts_in_reply_order():
    reply = "\n".join(
        [
            '<facts category="TIDE_TABLES">',
            "- High tide at Port Ellen is 04:12 on Monday.",
            "- Low tide is 10:31.",
            "</facts>",
            "",
            '<facts category="HARBOUR_RULES">',
            "* Never berth on the north quay at low water.",
            "</facts>",
        ]
    )
    parsed = parse_tagged(reply)
    assert parsed.facts == [
        Fact("TIDE_TABLES", "High tide at Port Ellen is 04:12 on Monday.", 2),
        Fact("TIDE_TABLES", "Low tide is 10:31.", 3),
        Fact("HARBOUR_RULES", "Never berth on the north quay at low water.", 7),
    ]
    assert parsed.malformed == []
    assert parsed.empty is False


def test_category_attribute_may_use_single_quotes_no_quotes_and_any_case():
    reply = (
        "<facts category='A_ONE'>\n- one\n</facts>\n"
        "<FACTS Category=B_TWO>\n- two\n</FACTS>\n"
        '  <facts  category = "C_THREE" >  \n- three\n  </facts>  \n'
    )
    parsed = parse_tagged(reply)
    assert pairs(parsed) == [("A_ONE", "one"), ("B_TWO", "two"), ("C_THREE", "three")]
    assert parsed.malformed == []


def test_continuation_lines_join_the_fact_above():
    reply = "\n".join(
        [
            '<facts category="TIDE_TABLES">',
            "- Spring tides reach 4.1 m at Port Ellen",
            "  during the equinox, so the pontoon",
            "  ramp is steep at low water.",
            "- Neap range is 1.2 m.",
            "</facts>",
        ]
    )
    parsed = parse_tagged(reply)
    assert pairs(parsed) == [
        (
            "TIDE_TABLES",
            "Spring tides reach 4.1 m at Port Ellen\nduring the equinox, so the pontoon\n"
            "ramp is steep at low water.",
        ),
        ("TIDE_TABLES", "Neap range is 1.2 m."),
    ]
    assert parsed.facts[1].line == 5


def test_a_first_line_without_bullet_starts_a_fact_and_blank_lines_are_skipped():
    reply = '<facts category="TIDE_TABLES">\nNo bullet here\n\n- bulleted\n\n</facts>'
    parsed = parse_tagged(reply)
    assert pairs(parsed) == [("TIDE_TABLES", "No bullet here"), ("TIDE_TABLES", "bulleted")]


def test_an_empty_block_gives_nothing_and_is_not_an_error():
    parsed = parse_tagged('<facts category="TIDE_TABLES">\n\n</facts>')
    assert parsed == ParsedReply(facts=[], malformed=[], empty=False)


# <no-facts/>


def test_no_facts_marker_means_empty():
    for reply in ("<no-facts/>", "  <no-facts />\n", "<NO-FACTS/>"):
        parsed = parse_tagged(reply)
        assert parsed == ParsedReply(facts=[], malformed=[], empty=True), reply


def test_no_facts_next_to_facts_is_not_empty():
    parsed = parse_tagged('<no-facts/>\n<facts category="A_ONE">\n- one\n</facts>')
    assert pairs(parsed) == [("A_ONE", "one")]
    assert parsed.empty is False


# Partly broken replies: the parser never raises and loses nothing


def test_unclosed_block_gives_no_facts_and_comes_back_whole():
    reply = '<facts category="A_ONE">\n- good\n</facts>\n<facts category="B_TWO">\n- cut\n- off'
    parsed = parse_tagged(reply)
    assert pairs(parsed) == [("A_ONE", "good")]
    assert parsed.malformed == [
        Malformed("- cut\n- off", "block not closed before the reply ended", 4)
    ]


def test_block_without_category_comes_back_as_malformed():
    for opening in ("<facts>", '<facts category="">', "<facts kind='x'>", '<facts category="  ">'):
        parsed = parse_tagged(f"{opening}\n- orphan fact\n</facts>")
        assert parsed.facts == [], opening
        assert parsed.malformed == [
            Malformed("- orphan fact", "<facts> tag without a category attribute", 1)
        ], opening


def test_stray_prose_is_reported_and_blocks_are_still_read():
    reply = "Sure! Here is what I found.\nTwo facts:\n\n" + (
        '<facts category="A_ONE">\n- one\n</facts>\nHope this helps.'
    )
    parsed = parse_tagged(reply)
    assert pairs(parsed) == [("A_ONE", "one")]
    assert parsed.malformed == [
        Malformed("Sure! Here is what I found.\nTwo facts:", OUTSIDE, 1),
        Malformed("Hope this helps.", OUTSIDE, 7),
    ]


def test_stray_closing_tag_is_reported():
    parsed = parse_tagged("</facts>")
    assert parsed.facts == []
    assert [(m.text, m.line) for m in parsed.malformed] == [("</facts>", 1)]
    assert "outside any" in parsed.malformed[0].reason


def test_nested_opening_breaks_the_outer_block_and_keeps_the_inner():
    reply = "\n".join(
        [
            '<facts category="A_ONE">',
            "- outer fact",
            '<facts category="B_TWO">',
            "- inner fact",
            "</facts>",
        ]
    )
    parsed = parse_tagged(reply)
    assert pairs(parsed) == [("B_TWO", "inner fact")]
    assert parsed.malformed == [
        Malformed("- outer fact", "block not closed before the next <facts>", 1)
    ]


def test_reply_with_no_block_is_entirely_malformed():
    parsed = parse_tagged("I could not find anything durable.\nSorry.")
    assert parsed.facts == []
    assert parsed.empty is False
    assert parsed.malformed == [Malformed("I could not find anything durable.\nSorry.", OUTSIDE, 1)]


def test_empty_reply():
    assert parse_tagged("") == ParsedReply(facts=[], malformed=[], empty=False)


# Properties

# Text on one line: no control characters (line breaks among them) and no
# Unicode line or paragraph separators, all of which str.splitlines splits on.
_LINE_CHARS = st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"))
_TAG_LINE = re.compile(r"</?facts\b[^>]*>|<facts[^>]*>|<no-facts\s*/>", re.IGNORECASE)


def _plain_line(line: str) -> bool:
    """A stripped line that the format would not read as a bullet or a tag."""
    return bool(line) and not re.match(r"[-*]\s", line) and not _TAG_LINE.fullmatch(line)


first_lines = st.text(_LINE_CHARS, min_size=1, max_size=40).map(str.strip).filter(bool)
more_lines = st.text(_LINE_CHARS, min_size=1, max_size=40).map(str.strip).filter(_plain_line)
fact_texts = st.builds(
    lambda first, rest: "\n".join([first, *rest]),
    first_lines,
    st.lists(more_lines, max_size=3),
)
category_names = st.from_regex(r"[A-Z][A-Z0-9_]{1,20}", fullmatch=True)
blocks = st.lists(
    st.tuples(category_names, st.lists(fact_texts, min_size=1, max_size=4)),
    min_size=1,
    max_size=4,
)


def render(blocks: list[tuple[str, list[str]]]) -> str:
    """Blocks in the format the built-in prompts ask for."""
    lines = []
    for category, texts in blocks:
        lines.append(f'<facts category="{category}">')
        for text in texts:
            first, *rest = text.split("\n")
            lines.append(f"- {first}")
            lines.extend(f"  {line}" for line in rest)
        lines.append("</facts>")
        lines.append("")
    return "\n".join(lines)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(blocks)
def test_round_trip_of_rendered_facts(blocks):
    parsed = parse_tagged(render(blocks))
    expected = [(category, text) for category, texts in blocks for text in texts]
    assert pairs(parsed) == expected
    assert parsed.malformed == []
    assert parsed.empty is False


tag_fragments = st.sampled_from(
    [
        '<facts category="A_ONE">',
        "<facts category='B_TWO'>",
        "<facts>",
        "</facts>",
        "<no-facts/>",
        "- a bullet",
        "  a continuation",
        "* star",
        "",
        '<facts category="UNCLOSED',
    ]
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    st.one_of(st.text(), st.lists(st.one_of(tag_fragments, st.text()), max_size=12).map("\n".join))
)
def test_never_raises_and_keeps_its_invariants(reply):
    parsed = parse_tagged(reply)
    assert isinstance(parsed, ParsedReply)
    assert all(fact.text and fact.text == fact.text.strip() for fact in parsed.facts)
    assert all(fact.category for fact in parsed.facts)
    assert not (parsed.empty and parsed.facts)
    line_count = len(reply.splitlines())
    assert all(1 <= piece.line <= line_count for piece in [*parsed.facts, *parsed.malformed])
    if not reply.strip():
        assert parsed == ParsedReply(facts=[], malformed=[], empty=False)
