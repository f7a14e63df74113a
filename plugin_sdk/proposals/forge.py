"""Opening the pull request of an approved file change, when the user asks for it.

``memsdk queue approve ID --open-pr`` applies a file change as always (a
commit on a new branch, a description file), then, when the target
repository has a remote and a forge command line is on PATH (``gh`` for
GitHub, else ``glab`` for GitLab), pushes the branch to the remote and opens
the pull (merge) request with the description. Otherwise it says why and
gives the exact commands to run. A push or a forge that fails leaves the
approval as it is (the branch is there) and is reported with the commands.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import attrs

from plugin_sdk.errors import GitError
from plugin_sdk.proposals.gitapply import Repo


@attrs.frozen
class PullRequest:
    opened: bool
    commands: list[str]  # what was run, or what to run by hand (in the repository)
    url: str = ""
    reason: str = ""  # why it was not opened

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def open_pull_request_commands(result: dict[str, Any]) -> PullRequest:
    """The commands that would push ``result``'s branch and open its pull request; runs nothing."""
    commands = _plan(result)[3]
    return PullRequest(False, commands, reason="not asked (--open-pr)")


def _plan(result: dict[str, Any]) -> tuple[Repo, str | None, str | None, list[str]]:
    repo = Repo(result["repo"])
    branch, description = result["branch"], result["description"]
    title = _title(description)
    remotes = repo.run("remote").split()
    remote = "origin" if "origin" in remotes else (remotes[0] if remotes else None)
    forge = shutil.which("gh") or shutil.which("glab")
    commands = [
        f"git push {remote or 'origin'} {branch}",
        _forge_command(Path(forge).name if forge else "gh", branch, title, description),
    ]
    return repo, remote, forge, commands


def open_pull_request(result: dict[str, Any]) -> PullRequest:
    """Push ``result``'s branch and open its pull request (see the module docstring)."""
    repo, remote, forge, commands = _plan(result)
    branch, description = result["branch"], result["description"]
    title = _title(description)
    if remote is None:
        return PullRequest(False, commands, reason=f"repository {repo.root} has no remote")
    if forge is None:
        return PullRequest(False, commands, reason="neither gh nor glab is on PATH")
    try:
        repo.run("push", remote, branch)
    except GitError as error:
        return PullRequest(False, commands, reason=f"push failed: {error}")
    args = _forge_args(Path(forge).name, branch, title, description)
    done = subprocess.run(
        [forge, *args], cwd=repo.root, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        reason = f"{Path(forge).name} failed: {lines[-1] if lines else done.returncode}"
        return PullRequest(False, commands[1:], reason=reason)
    url = next((line for line in done.stdout.split() if "://" in line), done.stdout.strip())
    return PullRequest(True, commands, url=url)


def _title(description: str) -> str:
    first = Path(description).read_text("utf-8").splitlines()[0]
    return first.removeprefix("# ").strip()


def _forge_args(forge: str, branch: str, title: str, description: str) -> list[str]:
    if forge == "glab":
        body = Path(description).read_text("utf-8")
        return ["mr", "create", "--source-branch", branch, "--title", title, "--description", body]
    return ["pr", "create", "--head", branch, "--title", title, "--body-file", description]


def _forge_command(forge: str, branch: str, title: str, description: str) -> str:
    if forge == "glab":
        return (
            f"glab mr create --source-branch {branch} --title {_quote(title)} "
            f'--description "$(cat {description})"'
        )
    return f"gh pr create --head {branch} --title {_quote(title)} --body-file {description}"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
