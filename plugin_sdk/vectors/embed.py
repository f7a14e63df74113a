"""Asking the host for vectors, and the form they are kept in.

The host embeds through the ``model_embed`` hook. Its answer is checked (one
vector per text, all of one length, finite numbers) and each vector is scaled
to unit length, so a dot product is the cosine similarity and every stored
vector can be compared with a query's without computing norms. A vector of
length zero has no direction: it is left out (``None`` in its place), and
the memory stays without a vector.

An answer that is a plain list of vectors has no model name; it is kept as
model ``unnamed/<dim>``, so a change of the host's model is noticed only when
the length of its vectors changes. An embedder returning
:class:`~plugin_sdk.plugin.records.Embeddings` names its model.

Vectors are stored as float32 bytes in the machine-independent little-endian
order that sqlite-vec reads too.
"""

from __future__ import annotations

import hashlib
import math
import sys
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from plugin_sdk.errors import EmbeddingError
from plugin_sdk.plugin.records import Embeddings

if TYPE_CHECKING:
    from plugin_sdk.store.connection import Store

PURPOSES = ("document", "query")


@attrs.frozen
class Embedded:
    """Unit vectors for some texts, by one model; ``None`` where a text had no direction."""

    model: str
    dim: int
    vectors: list[array | None]


def embed(store: Store, texts: Sequence[str], purpose: str = "document") -> Embedded | None:
    """The host's unit vectors for ``texts``, or ``None`` when no embedder answers."""
    if purpose not in PURPOSES:
        raise ValueError(f"purpose must be one of {', '.join(PURPOSES)}, got {purpose!r}")
    if not texts:
        return None
    answer = store.plugins.hook.model_embed(texts=list(texts), purpose=purpose)
    if answer is None:
        return None
    model, vectors = (
        (answer.model, answer.vectors) if isinstance(answer, Embeddings) else (None, answer)
    )
    if not isinstance(vectors, Sequence) or len(vectors) != len(texts):
        got = len(vectors) if isinstance(vectors, Sequence) else type(vectors).__name__
        raise EmbeddingError(f"model_embed returned {got} vectors for {len(texts)} texts")
    dims = {len(vector) for vector in vectors}
    if len(dims) != 1 or 0 in dims:
        raise EmbeddingError(f"model_embed returned vectors of lengths {sorted(dims)}")
    (dim,) = dims
    if model is None:
        model = f"unnamed/{dim}"
    if not isinstance(model, str) or not model:
        raise EmbeddingError(f"model_embed named its model {model!r}; a model id is a string")
    return Embedded(model=model, dim=dim, vectors=[unit(vector) for vector in vectors])


def unit(vector: Sequence[float]) -> array | None:
    """``vector`` scaled to length 1, as float32; ``None`` for a zero vector."""
    try:
        values = array("f", vector)
    except (TypeError, OverflowError) as error:
        raise EmbeddingError(
            f"model_embed returned a vector that is not numbers: {error}"
        ) from None
    norm = math.hypot(*values)  # NaN or infinite if any number is
    if not math.isfinite(norm):
        raise EmbeddingError("model_embed returned a vector with a NaN or infinite number")
    if norm == 0.0:
        return None
    return array("f", map((1.0 / norm).__mul__, values))


def to_blob(vector: array) -> bytes:
    """float32 little-endian bytes (what ``memory_vectors.vector`` and sqlite-vec hold)."""
    if sys.byteorder == "little":
        return vector.tobytes()
    swapped = array("f", vector)
    swapped.byteswap()
    return swapped.tobytes()


def from_blob(blob: bytes) -> array:
    vector = array("f")
    vector.frombytes(blob)
    if sys.byteorder != "little":
        vector.byteswap()
    return vector


def content_hash(text: str) -> str:
    """What ``memory_vectors.content_hash`` holds: sha256 of the exact text embedded."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
