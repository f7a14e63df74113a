"""The ``llm`` command-line tool's ``logs.db`` (SQLite), read without ``llm`` installed.

``llm`` has stored its log in two shapes, and a database upgraded over the
years holds both; both are read, every conversation in time order.

- **responses** (``llm`` before the message store; :mod:`.llm_responses`):
  one row per prompt and reply, grouped by ``conversation_id``.
- **threads** (the message store; :mod:`.llm_threads`): each thread's chain
  of messages from its first message to its tip. A thread has the id of the
  conversation it continues, and its chain holds that conversation's history
  again: such a conversation is read from the thread only, and its
  ``responses`` rows are counted.

System prompts (the ``system`` column, ``system`` messages) are skipped and
counted: they are the host's instructions, not what happened.
"""

from __future__ import annotations

from pathlib import Path

from plugin_sdk.errors import TranscriptError
from plugin_sdk.store import driver
from plugin_sdk.transcripts.llm_responses import Responses
from plugin_sdk.transcripts.llm_threads import Threads
from plugin_sdk.transcripts.model import ImportReport, Transcript
from plugin_sdk.transcripts.text import DEFAULT_TOOL_OUTPUT_CHARS

FORMAT = "llm-logs"


def read(path: Path, *, tool_output_chars: int = DEFAULT_TOOL_OUTPUT_CHARS) -> Transcript:
    """Import every conversation of an ``llm`` logs database; see the module docstring."""
    report = ImportReport(FORMAT, str(path))
    try:
        db = driver.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except driver.Error as error:
        raise TranscriptError(f"{path}: cannot open as SQLite ({error})") from error
    db.row_factory = driver.Row
    try:
        responses = Responses(db, report, tool_output_chars)
        if not responses.tables & {"responses", "threads"}:
            raise TranscriptError(
                f"{path}: not an llm logs database (no 'responses' or 'threads' table)"
            )
        threads = Threads(db, report, tool_output_chars)
        conversations = sorted(
            [*responses.conversations(), *threads.conversations()], key=lambda c: c[0]
        )
        messages = [message for _, batch in conversations for message in batch]
    except driver.DatabaseError as error:
        raise TranscriptError(f"{path}: cannot read as an llm logs database ({error})") from error
    finally:
        db.close()
    report.messages = len(messages)
    report.conversations = len({m.conversation for m in messages})
    return Transcript(messages, report)
