"""Project identity: every memory belongs to exactly one project.

A host names its project explicitly, or lets memsdk derive one from a working
directory: inside a git repository the project is ``git:<root commit>``, which
stays the same across clones, renames and moves of the checkout; elsewhere it
is ``path:<resolved absolute path>``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path


def project_for(directory: str | Path | None = None) -> str:
    """The project id for ``directory`` (default: the current directory).

    Uses the repository's root commit; a history with several roots (merged
    unrelated histories) takes the smallest hash, a stable choice.
    """
    where = Path(directory or Path.cwd()).resolve()
    root = _git_root_commit(where)
    if root:
        return f"git:{root}"
    return f"path:{where}"


def _git_root_commit(where: Path) -> str | None:
    try:
        result = subprocess.run(
            ["git", "rev-list", "--max-parents=0", "HEAD"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    roots = sorted(line.strip() for line in result.stdout.splitlines() if line.strip())
    if result.returncode != 0 or not roots:
        return None
    return roots[0]
