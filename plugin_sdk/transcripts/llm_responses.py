"""The ``responses`` table of an ``llm`` logs database (``llm`` before its message store).

One row per prompt and reply, grouped by ``conversation_id``. A row gives, in
order: the tool results it sent (``tool_results``, as ``tool`` messages), the
user's prompt with ``[fragment: source]`` for each fragment
(``prompt_fragments``) and a placeholder for each attachment
(``prompt_attachments``), then the reply with one summary line per tool call
(``tool_calls``). Tables and columns that an older ``llm`` did not have are
simply absent. A conversation that also has a thread (a newer ``llm``
continued it) is read from the thread; its rows here are counted.
"""

from __future__ import annotations

from collections.abc import Iterator

from plugin_sdk.store import driver
from plugin_sdk.transcripts.llm_db import LogsDatabase, location_name
from plugin_sdk.transcripts.model import Message
from plugin_sdk.transcripts.text import (
    media_placeholder,
    placeholder,
    tool_call,
    tool_output,
    tool_result,
)


class Responses(LogsDatabase):
    """Reads the ``responses`` table, one conversation at a time."""

    def conversations(self) -> Iterator[tuple[str, list[Message]]]:
        columns = self.columns("responses")
        if not columns:
            return
        wanted = ["id", "prompt", "system", "response", "conversation_id", "datetime_utc"]
        select = ", ".join(c if c in columns else f"NULL AS {c}" for c in wanted)
        rows = self.db.execute(f"SELECT {select} FROM responses ORDER BY datetime_utc, rowid")
        grouped: dict[str, list[driver.Row]] = {}
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
                    messages.extend(self.response(row, key))
                except driver.Error:
                    raise
                except Exception as error:  # a safety net: one odd row never stops an import
                    self.report.unreadable(f"responses {row['id']}", error)
            yield (str(responses[0]["datetime_utc"] or ""), messages)

    def response(self, row: driver.Row, conversation: str) -> list[Message]:
        where = f"responses {row['id']}"
        stamp = row["datetime_utc"]
        out = []
        for result in self.tool_results(row["id"]):
            out.append(Message("tool", result[1], where, conversation, stamp, result[0]))
        prompt = [row["prompt"] or ""]
        prompt += [
            placeholder(self.report, "fragment", source) for source in self.fragments(row["id"])
        ]
        prompt += [
            media_placeholder(self.report, a["type"], location_name(a["path"] or a["url"]))
            for a in self.attachments(row["id"])
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

    def tool_results(self, response_id: str) -> list[tuple[str | None, str]]:
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
                    media_placeholder(self.report, a["type"], location_name(a["path"] or a["url"]))
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

    def fragments(self, response_id: str) -> list[str]:
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

    def attachments(self, response_id: str) -> list[driver.Row]:
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
