"""Every exception memsdk raises, as one tree.

Every error a user can cause derives from :class:`MemsdkError`; the command
line prints its message as one line and exits non-zero. Messages name what was
wrong and where, and an operation that raises has written nothing.

Under the root, one base per area groups what went wrong there, so a host
can catch a whole area (``except ProposalError``) or one case
(``except WrongStatus``). A class sits with its subject, which is mostly the
area that raises it: :class:`NotFound` (a row) is a store error whichever area
looks the row up, :class:`NoModel` a model error though the historian raises
it, and :class:`WrongStatus`, raised by the approval queue and by dark-matter
review, is both a :class:`QueueError` and a :class:`RetainError`. Classes that
callers catch as ``ValueError`` or ``LookupError`` also derive from those. ::

    MemsdkError
    ├── StoreError                 the store file (and itself: cannot open or use it)
    │   ├── SchemaTooNew
    │   ├── SchemaMismatch         the file's schema differs from its migration records
    │   ├── StoreBusy              another process held the write lock too long
    │   ├── NotFound               (LookupError) a row every area looks up
    │   ├── InvalidMemory          (ValueError)
    │   ├── DuplicateMemory        (ValueError)
    │   ├── MergeRefused           (ValueError)
    │   ├── ReadOnlyMemory         (ValueError) another project's shared memory
    │   ├── ForgottenText          (ValueError) text that was forgotten, coming back
    │   ├── InvalidDocument        (ValueError) a parsed document over a limit
    │   ├── NoStore                a read found no store file at the path given
    │   ├── EmptyProject           (LookupError) a read of a project that holds nothing
    │   ├── ProjectConflict        (ValueError) a project name already in use
    │   └── InvalidExport          (ValueError) an export file that cannot be imported
    ├── CategoryError              categories and the packs that carry them
    │   ├── UnknownCategory        (ValueError)
    │   ├── PackError              (ValueError)
    │   ├── PackConflict           (ValueError)
    │   │   └── MigrationRequired
    │   └── InvalidCriteria        (ValueError)
    ├── ModelError                 the host's model: none, two, or the llm adapter failing
    │   ├── NoModel
    │   ├── ModelConflict          (ValueError)
    │   ├── LlmNotInstalled
    │   ├── LlmModelError
    │   └── EmbeddingError         (ValueError) an embedder's answer that cannot be stored
    ├── CompositeError             (ValueError) composites: raised itself
    ├── GridError                  (ValueError) the entity grid (and itself: a value it lacks)
    │   ├── NoGrid
    │   ├── InvalidEntityName
    │   └── DuplicateEntity
    ├── RetainError                the Retain Job and its review queue
    │   ├── InvalidObservation     (ValueError)
    │   ├── NoRetainPolicy
    │   └── WrongStatus            (see QueueError)
    ├── ProposalError              the approval queue
    │   ├── InvalidProposal        (ValueError)
    │   │   └── UnknownProposalCategory   (also an UnknownCategory)
    │   ├── QueueError             (ValueError)
    │   │   └── WrongStatus        (also a RetainError) a row not in the status needed
    │   ├── ApplyFailed
    │   │   └── WrongRepository
    │   ├── GitError
    │   └── UndoRefused
    ├── StageError                 the session stages (historian, dreamer)
    │   ├── HistorianReplyError
    │   ├── InvalidTranscript      (ValueError)
    │   ├── TaskBusy
    │   └── LeaseLost
    ├── TranscriptError            (ValueError) transcript files: raised itself
    └── HostError                  the MCP server and its tools
        ├── MissingExtra
        ├── ToolError              (ValueError)
        ├── AccessRefused          a bearer token unknown, or not bound to the project asked for
        └── HookError              (ValueError) a host hook payload memsdk cannot read
            └── PayloadError       a Claude Code hook input of the wrong shape (types, paths)

Some steps also raise a plain :class:`MemsdkError` for a one-off refusal that
no caller needs to catch separately.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "AccessRefused",
    "ApplyFailed",
    "CategoryError",
    "CompositeError",
    "DuplicateEntity",
    "DuplicateMemory",
    "EmbeddingError",
    "EmptyProject",
    "ForgottenText",
    "GitError",
    "GridError",
    "HistorianReplyError",
    "HookError",
    "HostError",
    "InvalidCriteria",
    "InvalidDocument",
    "InvalidEntityName",
    "InvalidExport",
    "InvalidMemory",
    "InvalidObservation",
    "InvalidProposal",
    "InvalidTranscript",
    "LeaseLost",
    "LlmModelError",
    "LlmNotInstalled",
    "MemsdkError",
    "MergeRefused",
    "MigrationRequired",
    "MissingExtra",
    "ModelConflict",
    "ModelError",
    "NoGrid",
    "NoModel",
    "NoRetainPolicy",
    "NoStore",
    "NotFound",
    "PackConflict",
    "PackError",
    "PayloadError",
    "ProjectConflict",
    "ProposalError",
    "QueueError",
    "ReadOnlyMemory",
    "RetainError",
    "SchemaMismatch",
    "SchemaTooNew",
    "StageError",
    "StoreBusy",
    "StoreError",
    "TaskBusy",
    "ToolError",
    "TranscriptError",
    "UndoRefused",
    "UnknownCategory",
    "UnknownProposalCategory",
    "WrongRepository",
    "WrongStatus",
]


class MemsdkError(Exception):
    """Base class for errors caused by input, configuration or store state."""


# The store ---------------------------------------------------------------------------------


class StoreError(MemsdkError):
    """The store's errors; raised itself when the file cannot be opened or used as it is.

    That is: not a SQLite database, unreadable, a SQLite older than memsdk
    needs, or a token encoding that is not installed.
    """


class SchemaTooNew(StoreError):
    """The store was migrated by a newer memsdk than this one (raised on opening it)."""


class SchemaMismatch(StoreError):
    """The file's schema does not match its migration records (raised on opening it).

    A table, trigger or index the applied migrations create is missing, a
    migration record is missing, or ``PRAGMA user_version`` disagrees with
    the records. The message names the difference; ``memsdk doctor`` shows it.
    """


class StoreBusy(StoreError):
    """Another process held the store's write lock through every bounded wait."""


class NotFound(StoreError, LookupError):
    """No row with the given id or name.

    Raised by every area that looks a row up: a memory, pack, session,
    composite, reference set, entity, observation, proposal, Compiled Truth or
    dreamer task. The message names what was asked for and where.
    """


class InvalidMemory(StoreError, ValueError):
    """A memory's fields are out of range (empty text, importance outside 1..100).

    Also an unknown speech act or a malformed search query.
    """


class DuplicateMemory(StoreError, ValueError):
    """An update would make a memory identical to another one in its category."""

    def __init__(self, memory_id: int, other_id: int) -> None:
        self.memory_id = memory_id
        self.other_id = other_id
        super().__init__(
            f"memory {memory_id} would duplicate memory {other_id} "
            "(same project, category and normalized text); nothing was changed"
        )


class MergeRefused(StoreError, ValueError):
    """A merge across projects or categories, or of memories that cannot merge."""


class InvalidDocument(StoreError, ValueError):
    """A parsed document (or a value in one) that the store does not take.

    Nested too deep, too large, a number that is not finite or outside
    SQLite's 64-bit range, text that is not valid Unicode (see
    ``store/limits.py``). ``reason`` says what, ``path`` where in the
    document; areas wrap it in their own error (``PackError``...).
    """

    def __init__(self, reason: str, path: str = "") -> None:
        self.reason = reason
        self.path = path
        super().__init__(f"{path}: {reason}" if path else reason)


class ReadOnlyMemory(StoreError, ValueError):
    """A change of another project's memory that this project may only read.

    Another project's memory is readable when it is shared (``scope =
    'global'`` and ``shareable``); only its own project changes it (see
    ``store/visibility.py``). One that is not shared is :class:`NotFound`.
    """


class ForgottenText(StoreError, ValueError):
    """A write of text that was forgotten in this project (``memsdk forget``).

    The tombstone keeps the text's hash so it cannot come back unnoticed;
    ``memsdk forget --undo ID`` lifts the refusal. ``memory_id`` is the
    forgotten memory.
    """

    def __init__(self, memory_id: int, where: str = "") -> None:
        self.memory_id = memory_id
        prefix = f"{where}: " if where else ""
        super().__init__(
            f"{prefix}this text was forgotten (memory {memory_id}) and is not stored again; "
            f"memsdk forget --undo {memory_id} allows it"
        )


# Categories and packs ----------------------------------------------------------------------


class NoStore(StoreError):
    """A command that only reads was pointed at a store file that does not exist."""


class EmptyProject(StoreError, LookupError):
    """A read of a project that holds nothing in this store (the message may name others)."""


class ProjectConflict(StoreError, ValueError):
    """A project name already in use where a new one is needed (rename, import)."""


class InvalidExport(StoreError, ValueError):
    """An export file that cannot be imported; the message names the line."""


class CategoryError(MemsdkError):
    """Categories and the packs that carry them: pack documents, installs, criteria."""


class UnknownCategory(CategoryError, ValueError):
    """A category that the store does not have (or has retired).

    Raised by writes, updates and searches that name a category; the message
    lists the store's categories in the order given (the store's priority
    order), and names the new name of a category a pack upgrade renamed.
    """

    def __init__(
        self,
        category: str,
        known: Iterable[str],
        *,
        where: str = "",
        renamed_to: str | None = None,
    ) -> None:
        self.category = category
        self.known = list(known)
        self.renamed_to = renamed_to
        listing = ", ".join(self.known) if self.known else "none: install a pack first"
        prefix = f"{where}: " if where else ""
        hint = (
            f"; it was renamed to {renamed_to!r} by a pack upgrade: use {renamed_to}"
            if renamed_to
            else ""
        )
        super().__init__(
            f"{prefix}unknown category {category!r}{hint}; this store's categories are: {listing}"
        )


class PackError(CategoryError, ValueError):
    """A pack document is malformed; names the file and the path inside it.

    Raised when a pack is parsed or validated (its syntax, the schema, its
    grid and retain sections), and when a pack source cannot be loaded.
    """

    def __init__(self, source: str, message: str, path: str = "") -> None:
        self.source = source
        self.path = path
        self.reason = message
        where = f"{source} at {path}" if path else source
        super().__init__(f"invalid pack {where}: {message}")


class PackConflict(CategoryError, ValueError):
    """A pack cannot be installed or upgraded as asked.

    It is installed already, the upgrade is a downgrade, or it declares a
    category another pack owns.
    """


class MigrationRequired(PackConflict):
    """A pack upgrade adds, removes or renames categories and needs a mapping."""


class InvalidCriteria(CategoryError, ValueError):
    """A criteria field name or value that is not allowed (setting a category's criteria)."""


# The host's model --------------------------------------------------------------------------


class ModelError(MemsdkError):
    """The host's model: none answers, another is registered already, or ``llm`` failed."""


class NoModel(ModelError):
    """A stage needs the host's model and no plugin answers ``model_complete``."""


class ModelConflict(ModelError, ValueError):
    """The plugin manager already carries another host model (``open_store(model=...)``)."""


class LlmNotInstalled(ModelError):
    """The ``llm`` library is not installed; the message says how to install it."""


class LlmModelError(ModelError):
    """``llm`` does not know the model, or the model failed to answer."""


class EmbeddingError(ModelError, ValueError):
    """The host's embedder answered with something that is not one finite vector per text,
    all of one length."""


# Composites --------------------------------------------------------------------------------


class CompositeError(MemsdkError, ValueError):
    """A composite operation that the rules forbid.

    For example a member that is superseded, already a member, or the
    composite's own head; an unknown composite type; a split that does not add
    up to the text.
    """


# The entity grid ---------------------------------------------------------------------------


class GridError(MemsdkError, ValueError):
    """The grid's errors; raised itself for a value the store's grid does not have.

    That is: an unknown cell, emotional tag or relation type, or a namespace
    pattern that cannot be read.
    """


class NoGrid(GridError):
    """No installed pack carries a ``[grid]`` section, and the step needs one."""


class InvalidEntityName(GridError):
    """An entity name that is not ``namespace:slug``."""


class DuplicateEntity(GridError):
    """An entity with that name already exists in the project."""


# The Retain Job ----------------------------------------------------------------------------


class RetainError(MemsdkError):
    """The Retain Job's errors: observations, the retain policy, dark-matter review."""


class InvalidObservation(RetainError, ValueError):
    """An observation document the schema (or its timestamp) does not accept.

    ``reason`` says what is wrong, ``path`` where in the document.
    """

    def __init__(self, reason: str, path: str = "") -> None:
        self.reason = reason
        self.path = path
        super().__init__(f"{path}: {reason}" if path else reason)


class NoRetainPolicy(RetainError):
    """The installed packs do not set every ``[retain]`` key (or set them inconsistently)."""


# The approval queue ------------------------------------------------------------------------


class ProposalError(MemsdkError):
    """The approval queue's errors: proposals, applying them, undoing them."""


class InvalidProposal(ProposalError, ValueError):
    """A proposal or a draft whose type or diff is malformed."""


class UnknownProposalCategory(InvalidProposal, UnknownCategory):
    """A memory entry for a category the store does not have (or has retired)."""


class QueueError(ProposalError, ValueError):
    """A queue step that cannot be done as asked.

    For example a review with nothing to apply, a duplicate of a pending
    proposal, an edit that moves a file change, an apply done twice.
    """


class ApplyFailed(ProposalError):
    """An approved change could not be applied; nothing of it was kept."""


class WrongRepository(ApplyFailed):
    """A file proposal asked to be applied to another repository than its own."""


class GitError(ProposalError):
    """git is missing, the path is not a repository, or a git command failed."""


class UndoRefused(ProposalError):
    """Rows changed since the change being undone, or the store refuses the old rows."""


class WrongStatus(QueueError, RetainError):
    """A step refused because the row is not in the status the step needs.

    Raised by the approval queue (a proposal that is not pending, approved or
    failed as the step requires, or that another step took first) and by
    dark-matter review (an observation that is no longer waiting for review).
    The message names the row, the status it is in, and what the step needs.
    Nothing was changed.
    """


# The session stages ------------------------------------------------------------------------


class StageError(MemsdkError):
    """The session stages' errors: the historian and the dreamer."""


class HistorianReplyError(StageError):
    """The model's reply holds nothing the parser can read.

    A non-empty reply is kept as a quarantined memory whose id the message names.
    """


class InvalidTranscript(StageError, ValueError):
    """Messages that are not a list of ``{"role": str, "content": str}``."""


class TaskBusy(StageError):
    """Another process holds the dreamer task's lease."""


class LeaseLost(StageError):
    """The lease expired and another process took the task over mid-run (the batch rolled back)."""


# Transcripts -------------------------------------------------------------------------------


class TranscriptError(MemsdkError, ValueError):
    """A transcript file that cannot be read at all (wrong format, not JSON, no such table)."""


# The MCP server ----------------------------------------------------------------------------


class HostError(MemsdkError):
    """What a host serves: the MCP server and its tools."""


class MissingExtra(HostError):
    """The optional ``mcp`` package is not installed; the message says how to install it."""


class ToolError(HostError, ValueError):
    """A tool call the server cannot carry out (unknown tool, bad arguments)."""


class AccessRefused(HostError):
    """A bearer token the server does not know, or one not bound to the project asked for."""


class HookError(HostError, ValueError):
    """A hook payload from a host (Claude Code) that memsdk cannot read."""


class PayloadError(HookError):
    """The hook's input is not a Claude Code event of the expected shape (``memsdk-hook``)."""
