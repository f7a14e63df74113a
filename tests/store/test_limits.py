"""``loads_json``'s fast path refuses and accepts exactly what the full check does.

Text that cannot hold a too deep tree or a lone surrogate is parsed with
numbers checked as they are read, and the walk over the tree is skipped;
everything else (and a number out of range met on the way) takes the walk.
The outcome, value or error with its path, must not depend on which.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plugin_sdk.errors import InvalidDocument
from plugin_sdk.store.limits import MAX_DEPTH, MAX_INTEGER, check_tree, loads_json


def reference(text: str, numbers: bool) -> Any:
    """The full check: parse, then walk the whole tree (what ``loads_json`` did before)."""
    try:
        if numbers:
            value = json.loads(text, parse_constant=_refuse)
        else:
            value = json.loads(text, parse_int=lambda d: int(d) if len(d) <= 4000 else d)
    except RecursionError as error:
        raise InvalidDocument(f"nested too deeply (more than {MAX_DEPTH} levels)") from error
    except json.JSONDecodeError:
        raise
    except ValueError as error:
        raise InvalidDocument(str(error).split(";")[0]) from error
    check_tree(value, numbers=numbers)
    return value


def _refuse(name: str) -> Any:
    raise InvalidDocument(f"{name} is not a finite number (JSON has no {name})")


def outcome(parse: Any, text: str, numbers: bool) -> tuple[str, str]:
    try:
        return "value", json.dumps(parse(text, numbers))
    except json.JSONDecodeError as error:
        return "syntax", error.msg
    except InvalidDocument as error:
        return "refused", str(error)


def ours(text: str, numbers: bool) -> Any:
    return loads_json(text, numbers=numbers)


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(["\ud800", "a\udfffb", "é", "\\u0041"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)
NUMBER_WORDS = st.sampled_from(
    [
        *("1e999", "-1e400", "1E5", "9" * 19, "-" + "9" * 19, "9223372036854775807"),
        *("1" * 5000, "NaN", "Infinity", "2.5e-3", "0"),
    ]
)


@settings(max_examples=300, deadline=None)
@given(value=VALUES, numbers=st.booleans(), ascii_only=st.booleans())
def test_the_fast_path_agrees_with_the_full_check_on_dumped_values(value, numbers, ascii_only):
    try:
        text = json.dumps(value, ensure_ascii=ascii_only)
    except ValueError:
        return
    assert outcome(ours, text, numbers) == outcome(reference, text, numbers)


@settings(max_examples=200, deadline=None)
@given(words=st.lists(NUMBER_WORDS, min_size=1, max_size=3), numbers=st.booleans())
def test_the_fast_path_agrees_on_numbers_written_by_hand(words, numbers):
    text = '{"a": [' + ", ".join(words) + '], "b": "x"}'
    assert outcome(ours, text, numbers) == outcome(reference, text, numbers)


@pytest.mark.parametrize("depth", [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 5])
@pytest.mark.parametrize("numbers", [True, False])
def test_nesting_around_the_limit_is_judged_the_same(depth, numbers):
    text = "[" * depth + "]" * depth
    wrapped = '{"k": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"
    for sample in (text, wrapped):
        assert outcome(ours, sample, numbers) == outcome(reference, sample, numbers)


def test_a_number_out_of_range_in_plain_text_is_refused_with_its_path():
    text = json.dumps({"a": {"b": [1, MAX_INTEGER + 1]}})
    with pytest.raises(InvalidDocument) as refused:
        loads_json(text)
    assert refused.value.path == "a.b[1]" and "outside SQLite's range" in refused.value.reason
    with pytest.raises(InvalidDocument, match="not a finite number") as infinite:
        loads_json('{"x": 1e999}')
    assert infinite.value.path == "x"
