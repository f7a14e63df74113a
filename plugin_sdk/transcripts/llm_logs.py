"""The ``llm`` command-line tool's ``logs.db`` (SQLite), read without ``llm`` installed.

``llm`` has stored its log in two shapes, and a database upgraded over the
years holds both; both are read, every conversation in time order.

- **responses** (``llm`` before the message store): one row per prompt and
  reply in ``responses``, grouped by ``conversation_id``. A row gives, in
  order: the tool results it sent (``tool_results``, as ``tool`` messages),
  the user's prompt with ``[fragment: source]`` for each fragment
  (``prompt_fragments``) and a placeholder for each attachment
  (``prompt_attachments``), then the reply with one summary line per tool
  call (``tool_calls``). Tables and columns that an older ``llm`` did not
  have are simply absent.
- **threads** (the message store: ``threads``, ``messages``, ``parts``,
  ``turns``): each thread's chain of messages from its first message to its
  tip. A thread has the id of the conversation it continues, and its chain
  holds that conversation's history again: such a conversation is read from
  the thread only, and its ``responses`` rows are counted. Text parts are kept (fragments referenced by a part become
  ``[fragment: source]``), tool calls are summarised, tool results become
  ``tool`` messages, attachments become placeholders, reasoning parts are
  skipped and counted. A message that a forked thread shares with a thread
  already read is counted, not repeated. Timestamps come from the turns.

System prompts (the ``system`` column, ``system`` messages) are skipped and
counted: they are the host's instructions, not what happened.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .model import ImportReport, Message, Transcript, TranscriptError
from .text import (
    DEFAULT_TOOL_OUTPUT_CHARS,
    media_placeholder,
    placeholder,
    tool_call,
    tool_name,
    tool_output,
    tool_result,
)

FORMAT = "llm-logs"


def read(path: Path, *, tool_output_chars: int = DEFAULT_TOOL_OUTPUT_CHARS) -> Transcript:
    """Import every conversation of an ``llm`` logs database; see the module docstring."""
    report = ImportReport(FORMAT, str(path))
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as error:
        raise TranscriptError(f"{path}: cannot open as SQLite ({error})") from error
    db.row_factory = sqlite3.Row
    try:
        reader = _Reader(db, report, tool_output_chars)
        if not reader.tables & {"responses", "threads"}:
            raise TranscriptError(
                f"{path}: not an llm logs database (no 'responses' or 'threads' table)"
            )
        conversations = sorted(
            [*reader.legacy_conversations(), *reader.threads()], key=lambda c: c[0]
        )
        messages = [message for _, batch in conversations for message in batch]
    except sqlite3.DatabaseError as error:
        raise TranscriptError(f"{path}: cannot read as an llm logs database ({error})") from error
    finally:
        db.close()
    report.messages = len(messages)
    report.conversations = len({m.conversation for m in messages})
    return Transcript(messages, report)


class _Reader:
    def __init__(self, db: sqlite3.Connection, report: ImportReport, limit: int) -> None:
        self.db = db
        self.report = report
        self.limit = limit
        self.tables = {
            row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }

    def columns(self, table: str) -> set[str]:
        if table not in self.tables:
            return set()
        return {row[1] for row in self.db.execute(f'PRAGMA table_info("{table}")')}

    # -- the responses table -------------------------------------------

    def legacy_conversations(self) -> Iterator[tuple[str, list[Message]]]:
        columns = self.columns("responses")
        if not columns:
            return
        wanted = ["id", "prompt", "system", "response", "conversation_id", "datetime_utc"]
        select = ", ".join(c if c in columns else f"NULL AS {c}" for c in wanted)
        rows = self.db.execute(f"SELECT {select} FROM responses ORDER BY datetime_utc, rowid")
        grouped: dict[str, list[sqlite3.Row]] = {}
        for row in rows:
            grouped.setdefault(str(row["conversation_id"] or row["id"]), []).append(row)
        threads = (
            {row[0] for row in self.db.execute("SELECT id FROM threads")}
            if "threads" in self.tables
            else set()
        )
        for conversation, responses in grouped.items():
            if conversation in threads:
                # A newer llm that continued (or also logged) this conversation
                # stored its whole history again as the thread of the same id.
                self.report.skip("response row repeated in the message store", len(responses))
                continue
            key = f"llm conversation {conversation}"
            messages: list[Message] = []
            systems: set[str] = set()
            for row in responses:
                if row["system"] and row["system"] not in systems:
                    systems.add(row["system"])
                    self.report.skip("system prompt")
                try:
                    messages.extend(self.legacy_response(row, key))
                except sqlite3.Error:
                    raise
                except Exception as error:  # a safety net: one odd row never stops an import
                    self.report.unreadable(f"responses {row['id']}", error)
            yield (str(responses[0]["datetime_utc"] or ""), messages)

    def legacy_response(self, row: sqlite3.Row, conversation: str) -> list[Message]:
        where = f"responses {row['id']}"
        stamp = row["datetime_utc"]
        out = []
        for result in self.legacy_tool_results(row["id"]):
            out.append(Message("tool", result[1], where, conversation, stamp, result[0]))
        prompt = [row["prompt"] or ""]
        prompt += [
            placeholder(self.report, "fragment", source)
            for source in self.legacy_fragments(row["id"])
        ]
        prompt += [
            media_placeholder(self.report, a["type"], _name(a["path"] or a["url"]))
            for a in self.legacy_attachments(row["id"])
        ]
        text = "\n".join(piece for piece in prompt if piece)
        if text.strip():
            out.append(Message("user", text, where, conversation, stamp))
        reply = [row["response"] or ""]
        if "tool_calls" in self.tables:
            for call in self.db.execute(
                "SELECT name, arguments FROM tool_calls WHERE response_id = ? ORDER BY id",
                [row["id"]],
            ):
                reply.append(tool_call(call["name"], call["arguments"]))
        text = "\n".join(piece for piece in reply if piece)
        if text.strip():
            out.append(Message("assistant", text, where, conversation, stamp))
        if not out:
            self.report.skip("empty response row")
        return out

    def legacy_tool_results(self, response_id: str) -> list[tuple[str | None, str]]:
        columns = self.columns("tool_results")
        if not columns:
            return []
        exception = "exception" if "exception" in columns else "NULL AS exception"
        results = []
        for row in self.db.execute(
            f"SELECT id, name, output, {exception} FROM tool_results "
            "WHERE response_id = ? ORDER BY id",
            [response_id],
        ):
            pieces = [tool_output(self.report, row["output"] or "", self.limit)]
            if "tool_results_attachments" in self.tables:
                pieces += [
                    media_placeholder(self.report, a["type"], _name(a["path"] or a["url"]))
                    for a in self.db.execute(
                        "SELECT a.type, a.path, a.url FROM tool_results_attachments t "
                        "JOIN attachments a ON a.id = t.attachment_id "
                        'WHERE t.tool_result_id = ? ORDER BY t."order"',
                        [row["id"]],
                    )
                ]
            if row["exception"]:
                pieces.append(f"exception: {row['exception']}")
            output = "\n".join(piece for piece in pieces if piece)
            results.append(
                (row["name"], tool_result(row["name"], output, error=bool(row["exception"])))
            )
        return results

    def legacy_fragments(self, response_id: str) -> list[str]:
        if "prompt_fragments" not in self.tables:
            return []
        return [
            row[0] or "unnamed"
            for row in self.db.execute(
                "SELECT f.source FROM prompt_fragments p JOIN fragments f ON f.id = p.fragment_id "
                'WHERE p.response_id = ? ORDER BY p."order"',
                [response_id],
            )
        ]

    def legacy_attachments(self, response_id: str) -> list[sqlite3.Row]:
        if "prompt_attachments" not in self.tables:
            return []
        return list(
            self.db.execute(
                "SELECT a.type, a.path, a.url FROM prompt_attachments p "
                "JOIN attachments a ON a.id = p.attachment_id "
                'WHERE p.response_id = ? ORDER BY p."order"',
                [response_id],
            )
        )

    # -- the message store ---------------------------------------------

    def threads(self) -> Iterator[tuple[str, list[Message]]]:
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
                except sqlite3.Error:
                    raise
                except Exception as error:  # a safety net: one odd message never stops an import
                    self.report.unreadable(where, error)
            if messages:
                yield (str(thread["datetime_utc"] or ""), messages)

    def chain(self, thread_id: str, tip: str | None) -> list[sqlite3.Row]:
        """The thread's messages from its first to ``tip``, following parent links.

        A message met twice (a loop in the links) ends the walk; it is reported.
        """
        rows: list[sqlite3.Row] = []
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
                output = [tool_output(self.report, _plain(payload.get("output")), self.limit)]
                output += self.attachment_placeholders(self.listed(payload, "attachments", where))
                exception = _plain(payload.get("exception"))
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
            return _plain(text)
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
                pieces.append(_plain(piece["literal"]))
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
                    media_placeholder(self.report, row["type"], _name(row["path"] or row["url"]))
                )
        return out


def _plain(value: Any) -> str:
    """A value as text: a string as it is, null as nothing, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return json.dumps(value, ensure_ascii=False)


def _key(value: Any) -> str | int | None:
    """An id from a payload, if it can be one (a string or an integer)."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63:
        return value
    return None


def _name(location: Any) -> str | None:
    if not isinstance(location, str) or not location:
        return None
    return location.rstrip("/").rsplit("/", 1)[-1] or location
