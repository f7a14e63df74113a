"""What every transcript importer produces: normalized messages and an import report.

A :class:`Message` is one turn the historian can read: a role (``user``,
``assistant`` or ``tool``), its text, the conversation it belongs to (chunks
never span two), an optional timestamp and tool name, and where it came from
in the file (``source``), so a fact can be traced back. ``key`` names the
record it came from (a Claude Code ``uuid``, a ChatGPT node id, an index) and
``position`` where that record ends in the file (a byte offset for JSON
Lines, else -1): the import ledger uses them to send only what is new.
``explicit`` marks a message in which the user asked outright that something
be remembered (Claude Code's ``#`` memory input): the historian is told so.

The :class:`ImportReport` is the importer's account of everything it did not
turn into a message: skipped records and parts counted by kind, malformed
input with its position, placeholders written in place of images and other
media, tool output that was shortened. Nothing is dropped without a line in
the report.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import attrs

ROLES = ("user", "assistant", "tool")
EXPLICIT_REMEMBER = "remember"  # the value of a historian message's "explicit" key


@attrs.frozen
class Message:
    """One normalized transcript message."""

    role: str  # one of ROLES
    text: str
    source: str  # where in the file: "line 12", "messages[3]", "responses 01j...";
    conversation: str = ""
    timestamp: str | None = None
    tool: str | None = None  # the tool a "tool" message reports on
    key: str = ""  # the record's own id in the file, for the import ledger
    position: int = -1  # byte offset just past the message's last record (JSON Lines), else -1
    explicit: bool = False  # the user asked outright to remember this

    def as_historian(self) -> dict[str, str]:
        """The mapping :func:`plugin_sdk.stages.historian.run_historian` takes.

        ``{"role", "content"}``, plus ``"explicit": "remember"`` when the user
        asked outright to remember what the message says, and ``"timestamp"``
        when the transcript gives one.
        """
        message = {"role": self.role, "content": self.text}
        if self.explicit:
            message["explicit"] = EXPLICIT_REMEMBER
        if self.timestamp:
            message["timestamp"] = self.timestamp
        return message


@attrs.define
class ImportReport:
    """What an importer kept, skipped, replaced and could not read."""

    format: str
    source: str
    messages: int = 0
    conversations: int = 0
    skipped: Counter[str] = attrs.field(factory=Counter)
    placeholders: Counter[str] = attrs.field(factory=Counter)
    shortened: int = 0  # tool outputs cut to the importer's limit, with a marker in the text
    problems: list[str] = attrs.field(factory=list)  # malformed input, with its position

    def skip(self, what: str, count: int = 1) -> None:
        """Count a record or part that is deliberately not imported."""
        self.skipped[what] += count

    def problem(self, where: str, reason: str) -> None:
        """Record input that could not be read (it is skipped, and listed here)."""
        self.problems.append(f"{where}: {reason}")

    def unreadable(self, where: str, error: Exception) -> None:
        """Record a record the importer failed on (a safety net: the import goes on)."""
        self.problem(where, f"cannot read ({type(error).__name__}: {error})")
        self.skip("unreadable record")

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "source": self.source,
            "messages": self.messages,
            "conversations": self.conversations,
            "skipped": dict(sorted(self.skipped.items())),
            "placeholders": dict(sorted(self.placeholders.items())),
            "shortened": self.shortened,
            "problems": list(self.problems),
        }

    def lines(self) -> list[str]:
        """The report as short human-readable lines."""
        out = [
            f"{self.source}: {self.format}, {self.messages} messages "
            f"in {self.conversations} conversation(s)"
        ]
        if self.skipped:
            out.append(
                "skipped: " + ", ".join(f"{what} ({n})" for what, n in sorted(self.skipped.items()))
            )
        if self.placeholders:
            out.append(
                "placeholders: "
                + ", ".join(f"{what} ({n})" for what, n in sorted(self.placeholders.items()))
            )
        if self.shortened:
            out.append(f"tool outputs shortened: {self.shortened}")
        out.extend(f"problem: {problem}" for problem in self.problems)
        return out


@attrs.define
class Transcript:
    """An imported transcript: its messages in order, and the report."""

    messages: list[Message]
    report: ImportReport
    consumed: int = -1  # JSON Lines: bytes read up to the end of the last record read, else -1
