"""Credentials out of every error that is printed or stored: one :func:`redact`.

A provider's error may echo the API key it was given; a git remote may carry
a token in its URL. Whatever memsdk prints (the command line's ``Error:``
line) or stores (a dreamer task's ``last_error``, a failed proposal's or
observation's ``error``) goes through :func:`redact` first, which replaces
what looks like a credential with ``[redacted]``:

- API-key shapes: ``sk-...`` (OpenAI, Anthropic ``sk-ant-...``), ``ghp_`` and
  other GitHub tokens, ``xox.-`` Slack tokens, Google ``AIza...`` keys,
  AWS access key ids (``AKIA...``, ``ASIA...``) and ``aws_secret_access_key``
  values;
- ``Authorization:`` and ``Proxy-Authorization:`` header values, ``Bearer`` and
  ``Basic`` credentials, ``x-api-key`` / ``api-key`` headers;
- ``key=value`` pairs whose key names a secret (``api_key``, ``token``,
  ``password``, ``secret``...), in text, JSON or query strings;
- the password in a URL (``https://user:password@host``).

It is eager, but not about paths and prose: a secret-sounding name that is
part of a path (``/etc/passwd``, ``~/.config/token``) is a file name, not a
key; ``key: value`` where the value is a lowercase word followed by more
words (``passwd: cannot tell the format``) is a sentence, not a credential;
``Basic`` / ``Bearer`` redact only a credential-shaped word (one with a digit,
a capital or a symbol), not ``basic authentication``. A false positive still
costs at most a word of an error message.
"""

from __future__ import annotations

import re

REDACTED = "[redacted]"

_PATTERNS = (
    # header values and bearer credentials
    re.compile(r"(?i)\b((?:proxy-)?authorization\s*[:=]\s*)(?:\"|')?[^\r\n\"',;]+"),
    re.compile(r"(?i)\b(bearer|basic)(\s+)(?-i:(?![a-z]+\b))[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"(?i)\b((?:x-)?api-key\s*[:=]\s*)(?:\"|')?[^\s\"',;]+"),
    # URL credentials
    re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+(@)"),
)
# key=value / "key": "value" with a secret-sounding key
_KEY_VALUE = re.compile(
    r"(?i)((?:api[_-]?key|access[_-]?token|auth[_-]?token|token|secret(?:[_-]?access[_-]?key)?"
    r"|password|passwd|client[_-]?secret)[\"']?\s*([:=])\s*[\"']?)"
    r"(?!(?-i:[a-z]+)[ \t]+\w)[^\s\"'&,;}]+"
)
_PATH_RUN = re.compile(r"[^\s\"'(\[{<]*$")
_KEY_SHAPES = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{12,}"  # OpenAI, Anthropic (sk-ant-...)
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|AIza[0-9A-Za-z_-]{30,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16})\b"
)


def redact(text: object) -> str:
    """``text`` (made a string) with credentials replaced by ``[redacted]``."""
    result = str(text)
    result = _KEY_SHAPES.sub(REDACTED, result)
    for pattern in _PATTERNS:
        result = pattern.sub(_keep_prefix, result)
    return _KEY_VALUE.sub(_key_value, result)


def _key_value(match: re.Match[str]) -> str:
    """``key=[redacted]``, unless the key is a file named in a path (``/etc/passwd:``)."""
    run = _PATH_RUN.search(match.string, max(0, match.start() - 512), match.start())
    before = run.group() if run else ""
    in_path = "/" in before or "\\" in before or before.endswith("~")
    if match.group(2) == ":" and in_path and not any(mark in before for mark in "?&="):
        return match.group()
    return match.group(1) + REDACTED


def _keep_prefix(match: re.Match[str]) -> str:
    groups = [g for g in match.groups() if g is not None]
    if len(groups) == 2 and groups[1] == "@":  # URL: scheme://user: [redacted] @
        return f"{groups[0]}{REDACTED}@"
    return "".join(groups) + REDACTED
