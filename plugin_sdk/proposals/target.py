"""Where file proposals go: the target repository and how a change is applied there.

:class:`Target` names the repository (by default the one a proposal was made
against, else the current directory), where drafts land in it (the
instructions file, the settings JSON, the skills directory), the base commit
and the new branch. An apply that cannot be done raises :class:`ApplyFailed`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from plugin_sdk.errors import WrongRepository
from plugin_sdk.proposals.gitapply import Repo

SETTINGS_FILE = ".claude/settings.json"
SKILLS_DIR = ".claude/skills"


@attrs.frozen
class Target:
    """Where file proposals go, and how they are applied.

    :param repo: the target git repository (default: the current directory).
    :param instructions_file: the agent's instructions file; default: CLAUDE.md,
        or AGENTS.md when only that one exists.
    :param settings_file: the settings JSON holding ``permissions.allow``.
    :param skills_dir: where skills live (``NAME/SKILL.md`` under it).
    :param base: the commit a new branch starts from.
    :param branch: the new branch's name (default ``memsdk/proposal-ID``).
    :param merge: when the file changed since the proposal, try a three-way
        merge instead of failing (a conflict still fails).
    :param other_repo: apply a proposal made against one repository to
        ``repo``, another one (refused otherwise).
    """

    repo: str | Path | None = None
    instructions_file: str | None = None
    settings_file: str = SETTINGS_FILE
    skills_dir: str = SKILLS_DIR
    base: str = "HEAD"
    branch: str | None = None
    merge: bool = False
    other_repo: bool = False

    def open(self) -> Repo:
        return Repo(self.repo if self.repo is not None else Path.cwd())

    def open_for(self, proposal_id: int, diff: dict[str, Any]) -> Repo:
        """The repository to apply a file diff to: by default the one it was made against.

        A diff without ``repo`` (filed exact through the API) goes to ``repo``
        or the current directory. Another repository than the diff's, or one
        whose history lacks the diff's ``root`` commit, is refused unless
        ``other_repo``.
        """
        if "repo" not in diff:
            return self.open()
        repo = Repo(diff["repo"] if self.repo is None else self.repo)
        if self.other_repo:
            return repo
        made = f"proposal {proposal_id} was made against {diff['repo']}"
        if str(repo.root) != diff["repo"]:
            raise WrongRepository(
                f"{made}; {repo.root} is another repository: approve it without a repository "
                "to apply it there, or allow another repository (--other-repo) to apply it here"
            )
        if not repo.has_commit(diff["root"]):
            raise WrongRepository(
                f"{made}, whose history starts at {diff['root'][:12]}; the repository there now "
                "has no such commit (re-created?): allow another repository (--other-repo) "
                "to apply it anyway"
            )
        return repo

    def branch_for(self, proposal_id: int) -> str:
        return self.branch or f"memsdk/proposal-{proposal_id}"
