"""Redaction takes credentials and leaves paths and ordinary words alone."""

from hypothesis import given
from hypothesis import strategies as st

from plugin_sdk.redact import REDACTED, redact

SECRET_WORDS = ["passwd", "password", "token", "secret", "api_key", "auth_token", "client_secret"]
WORDS = st.from_regex(r"[a-z]{1,10}", fullmatch=True)
SEGMENT = st.one_of(
    st.sampled_from(SECRET_WORDS), st.from_regex(r"[A-Za-z0-9_.-]{1,12}", fullmatch=True)
)


def test_a_path_in_an_error_keeps_its_name_and_its_sentence():
    assert (
        redact("/etc/passwd: cannot tell the transcript format")
        == "/etc/passwd: cannot tell the transcript format"
    )
    assert redact("~/.config/token: not found") == "~/.config/token: not found"
    assert redact("basic authentication failed") == "basic authentication failed"


def test_real_secrets_are_still_redacted():
    for text, secret in [
        ("password: hunter2", "hunter2"),
        ("password=letmein", "letmein"),
        ("DB_PASSWORD=abc", "abc"),
        ('{"api_key": "abcdef"}', "abcdef"),
        ("https://h/x?token=abc123&y=1", "abc123"),
        ("config.password=abc", "abc"),
        ("Authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
        ("Bearer AbCdEfGh12345678", "AbCdEfGh12345678"),
        ("https://user:pa55word@example.com/x", "pa55word"),
    ]:
        assert secret not in redact(text), text


@given(
    st.lists(SEGMENT, min_size=1, max_size=5),
    st.sampled_from(["/", "~/", "./", "C:\\"]),
    st.lists(WORDS, min_size=2, max_size=6),
)
def test_a_path_and_a_sentence_pass_through_unchanged(segments, root, words):
    separator = "\\" if root.endswith("\\") else "/"
    text = f"{root}{separator.join(segments)}: {' '.join(words)}"
    assert redact(text) == text


@given(
    st.sampled_from(SECRET_WORDS),
    st.sampled_from(["{k}={v}", "{k}: {v}", '"{k}": "{v}"', "x?{k}={v}&y=z", "error {k}={v} here"]),
    st.from_regex(r"[A-Za-z0-9+/_.-]{0,12}[0-9A-Z+/][A-Za-z0-9+/_.-]{0,12}", fullmatch=True),
)
def test_a_secret_value_never_survives(key, shape, value):
    text = shape.format(k=key, v=value)
    out = redact(text)
    assert REDACTED in out
    assert value not in out.replace(key, "")
