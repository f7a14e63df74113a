"""Normalization for deduplication (normalize.py), as properties."""

from __future__ import annotations

from hypothesis import assume, example, given
from hypothesis import strategies as st

from plugin_sdk.store.normalize import normalize, normalized_hash

WHITESPACE = " \t\n\r\u00a0\u2003"
TRAILING = ".!;"

# Text biased towards the characters the rules act on, plus arbitrary text.
edgy_text = st.text(alphabet="aBcÉß1 \t\n.!;,-ＡＢ\u00a0") | st.text()
words = st.lists(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=1),
    min_size=1,
    max_size=8,
)
separator = st.text(alphabet=WHITESPACE, min_size=1, max_size=3)


@given(edgy_text)
@example("Done. .")
@example("x ; !")
def test_normalize_is_idempotent(text):
    once = normalize(text)
    assert normalize(once) == once
    assert normalized_hash(once) == normalized_hash(text)


@given(
    ws=words,
    sep=separator,
    lead=st.text(alphabet=WHITESPACE, max_size=3),
    tail=st.text(alphabet=WHITESPACE + TRAILING, max_size=4),
)
@example(ws=["Deploys", "on", "Tuesdays"], sep="  ", lead="", tail=". .")
def test_case_whitespace_and_trailing_punctuation_variants_hash_equal(ws, sep, lead, tail):
    plain = " ".join(ws)
    spaced = sep.join(ws)
    variants = [
        plain.upper(),
        plain.lower(),
        plain.swapcase(),
        lead + spaced,
        plain + ".",
        plain + tail,
        lead + spaced.upper() + tail,
    ]
    for variant in variants:
        assert normalized_hash(variant) == normalized_hash(plain), variant


@given(words, words)
def test_texts_with_different_words_hash_differently(a, b):
    assume([w.casefold() for w in a] != [w.casefold() for w in b])
    assert normalized_hash(" ".join(a)) != normalized_hash(" ".join(b))


def test_punctuation_inside_digits_and_word_order_are_kept():
    assert normalize("Max  Connections:\n400.") == "max connections: 400"
    assert normalized_hash("a.b") != normalized_hash("ab")
    assert normalized_hash("port 8080") != normalized_hash("port 8081")
    assert normalized_hash("deploy then test") != normalized_hash("test then deploy")
    assert normalized_hash("Don't deploy") != normalized_hash("Dont deploy")


def test_unicode_compatibility_forms_fold():
    assert normalize("ＡＰＩ　ｖ２") == "api v2"
    assert normalize("STRASSE") == normalize("straße")


def test_hash_is_sha256_hex():
    digest = normalized_hash("anything")
    assert len(digest) == 64
    assert int(digest, 16) >= 0


def regex_normalize(text: str) -> str:
    """The first implementation, with regular expressions: stored hashes came from it."""
    import re
    import unicodedata

    folded = unicodedata.normalize("NFKC", text).casefold()
    collapsed = re.sub(r"\s+", " ", folded).strip()
    return re.sub(r"[\s.!;]+$", "", collapsed)


@given(edgy_text | st.text(alphabet=WHITESPACE + "\x1c\x1f\x85\u2028\u3000\u180e\u200b a.;!"))
@example("a\x1c. \u2028;")
@example("x\n")
def test_normalize_equals_the_regular_expression_form(text):
    # Hashes already stored were made by the regex form: the fast one must agree.
    assert normalize(text) == regex_normalize(text)
