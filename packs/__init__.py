"""memsdk's built-in packs (installed as ``plugin_sdk_packs``).

Each attribute is a pack file that the ``memsdk.packs`` entry points in
memsdk's own ``pyproject.toml`` name, the same way a third-party pack is found.
"""

from importlib import resources

_here = resources.files(__name__)

dev = _here / "dev.toml"
ops = _here / "ops.toml"


def sample(pack_name: str) -> str | None:
    """The bundled sample memories (JSONL text) for a built-in pack, if any."""
    path = _here / "samples" / f"{pack_name}.jsonl"
    return path.read_text("utf-8") if path.is_file() else None


def sample_grid(pack_name: str) -> str | None:
    """The bundled sample entities, relations and links (JSON text) for a pack, if any."""
    path = _here / "samples" / f"{pack_name}.grid.json"
    return path.read_text("utf-8") if path.is_file() else None


#: Searches ``memsdk demo`` runs on each sample store.
SAMPLE_QUERIES = {
    "ops": ["postgres failover", "rotate gateway keys", "vllm context length"],
}
