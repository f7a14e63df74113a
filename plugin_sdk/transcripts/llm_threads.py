"""The message store of an ``llm`` logs database: ``threads``, ``messages``, ``parts``, ``turns``.

Each thread is read as its chain of messages from the first to its tip,
following parent links (a loop in them is reported, and read up to there).
Text parts are kept (fragments referenced by a part become
``[fragment: source]``), tool calls are summarised, tool results become
``tool`` messages, attachments become placeholders, reasoning parts are
skipped and counted. A message that a forked thread shares with a thread
already read is counted, not repeated. Timestamps come from the turns.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from plugin_sdk.store import driver
from plugin_sdk.transcripts.llm_db import LogsDatabase, location_name, plain
from plugin_sdk.transcripts.model import Message
from plugin_sdk.transcripts.text import (
    media_placeholder,
    placeholder,
    tool_call,
    tool_name,
    tool_output,
    tool_result,
)


class Threads(LogsDatabase):
    """Reads the message store, one thread at a time."""

    def conversations(self) -> Iterator[tuple[str, list[Message]]]:
        if not {"threads", "messages", "parts"} <= self.tables:
            return
        seen: set[str] = set()
        for thread in self.db.execute(
            "SELECT id, tip_message_hash, datetime_utc FROM threads ORDER BY datetime_utc, rowid"
        ).fetchall():
            chain = self.chain(thread["id"], thread["tip_message_hash"])
            stamps = self.turn_stamps(thread["id"], [row["hash"] for row in chain])
            key = f"llm thread {thread['id']}"
            messages: list[Message] = []
            for row in chain:
                if row["hash"] in seen:
                    self.report.skip("message shared with an earlier thread (a fork)")
                    continue
                seen.add(row["hash"])
                where = f"messages {str(row['hash'])[:16]}"
                context = (where, key, stamps.get(row["hash"]) or thread["datetime_utc"])
                try:
                    messages.extend(self.stored_message(row["hash"], row["role"], context))
                except driver.Error:
                    raise
                except Exception as error:  # a safety net: one odd message never stops an import
                    self.report.unreadable(where, error)
            if messages:
                yield (str(thread["datetime_utc"] or ""), messages)

    def chain(self, thread_id: str, tip: str | None) -> list[driver.Row]:
        """The thread's messages from its first to ``tip``, following parent links.

        A message met twice (a loop in the links) ends the walk; it is reported.
        """
        rows: list[driver.Row] = []
        seen: set[str] = set()
        current = tip
        while current:
            if current in seen:
                self.report.problem(
                    f"threads {thread_id}",
                    f"the message chain loops back to message {current}; read up to there",
                )
                break
            seen.add(current)
            row = self.db.execute(
                "SELECT hash, parent_hash, role FROM messages WHERE hash = ?", [current]
            ).fetchone()
            if row is None:
                break
            rows.append(row)
            current = row["parent_hash"]
        return rows[::-1]

    def turn_stamps(self, thread_id: str, hashes: list[str]) -> dict[str, str]:
        if "turns" not in self.tables:
            return {}
        index = {h: i for i, h in enumerate(hashes)}
        stamps: dict[str, str] = {}
        for turn in self.db.execute(
            "SELECT parent_message_hash, tip_message_hash, datetime_utc FROM turns "
            "WHERE thread_id = ? ORDER BY datetime_utc, rowid",
            [thread_id],
        ):
            # A turn's input (up to its parent) and output (up to its tip) are
            # new at this turn unless an earlier turn already had them.
            end = index.get(turn["tip_message_hash"])
            if end is None:
                continue
            for h in hashes[: end + 1]:
                stamps.setdefault(h, turn["datetime_utc"])
        return stamps

    def stored_message(
        self, message_hash: str, role: str, context: tuple[str, str, str | None]
    ) -> list[Message]:
        where, conversation, stamp = context
        if role == "system":
            self.report.skip("system prompt")
            return []
        if role not in ("user", "assistant", "tool"):
            self.report.skip(f"role {role!r}")
            return []
        out: list[Message] = []
        pieces: list[str] = []

        def flush() -> None:
            text = "\n".join(piece for piece in pieces if piece)
            if text.strip():
                out.append(Message(role, text, where, conversation, stamp))
            pieces.clear()

        for part in self.db.execute(
            "SELECT type, tool_name, text, payload FROM parts WHERE message_hash = ? "
            "ORDER BY position",
            [message_hash],
        ).fetchall():
            payload = self.payload(part["payload"], where)
            kind = part["type"]
            if kind == "text":
                pieces.append(self.part_text(part["text"], payload, where))
            elif kind == "tool_call":
                pieces.append(tool_call(part["tool_name"], payload.get("arguments")))
            elif kind == "tool_result":
                flush()
                name = tool_name(part["tool_name"]) or tool_name(payload.get("name"))
                output = [tool_output(self.report, plain(payload.get("output")), self.limit)]
                output += self.attachment_placeholders(self.listed(payload, "attachments", where))
                exception = plain(payload.get("exception"))
                if exception:
                    output.append(f"exception: {exception}")
                text = tool_result(name, "\n".join(p for p in output if p), error=bool(exception))
                out.append(Message("tool", text, where, conversation, stamp, name))
            elif kind == "attachment":
                pieces += self.attachment_placeholders([payload.get("attachment")])
            elif kind == "reasoning":
                self.report.skip("reasoning part")
            else:
                self.report.skip(f"part type {kind!r}")
        flush()
        return out

    def payload(self, value: Any, where: str) -> dict[str, Any]:
        """A part's JSON payload; one that is not a JSON object is reported and read as empty."""
        if value is None or value == "":
            return {}
        try:
            loaded = json.loads(value)
        except (TypeError, ValueError, RecursionError):
            loaded = None
        if isinstance(loaded, dict):
            return loaded
        self.report.problem(where, "a part payload that is not a JSON object")
        return {}

    def listed(self, payload: dict[str, Any], key: str, where: str) -> list[Any]:
        """``payload[key]`` as a list: missing is empty, anything else is reported."""
        value = payload.get(key)
        if value is None:
            return []
        if isinstance(value, list):
            return value
        self.report.problem(where, f"{key} is a {type(value).__name__}, not a list")
        return []

    def part_text(self, text: Any, payload: dict[str, Any], where: str) -> str:
        if text is not None:
            return plain(text)
        pieces = []
        refs = payload.get("text_ref")
        if refs is not None and not isinstance(refs, list):
            self.report.problem(where, f"text_ref is a {type(refs).__name__}, not a list")
            self.report.skip("malformed text reference")
        for index, piece in enumerate(refs if isinstance(refs, list) else []):
            if not isinstance(piece, dict):
                self.report.problem(
                    where, f"text_ref[{index}] is a {type(piece).__name__}, not an object"
                )
                self.report.skip("malformed text reference")
            elif "literal" in piece:
                pieces.append(plain(piece["literal"]))
            else:
                fragment = _key(piece.get("fragment"))
                row = (
                    self.db.execute(
                        "SELECT source FROM fragments WHERE id = ?", [fragment]
                    ).fetchone()
                    if fragment is not None and "fragments" in self.tables
                    else None
                )
                pieces.append(placeholder(self.report, "fragment", (row and row[0]) or "unnamed"))
        return "".join(pieces)

    def attachment_placeholders(self, refs: list[Any]) -> list[str]:
        out = []
        for ref in refs:
            attachment_id = _key(ref.get("id")) if isinstance(ref, dict) else None
            row = (
                self.db.execute(
                    "SELECT type, path, url FROM attachments WHERE id = ?", [attachment_id]
                ).fetchone()
                if attachment_id is not None and "attachments" in self.tables
                else None
            )
            if row is None:
                out.append(placeholder(self.report, "attachment"))
            else:
                out.append(
                    media_placeholder(
                        self.report, row["type"], location_name(row["path"] or row["url"])
                    )
                )
        return out


def _key(value: Any) -> str | int | None:
    """An id from a payload, if it can be one (a string or an integer)."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63:
        return value
    return None
