"""Issue 17: ``queue approve --open-pr`` pushes the branch and opens the pull request."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from plugin_sdk import Store, validate_pack
from plugin_sdk.cli import cli
from plugin_sdk.proposals.detect import file_draft
from plugin_sdk.proposals.filing import ProposalDraft
from plugin_sdk.proposals.target import Target
from plugin_sdk.testing import fresh_plugin_manager, pack_document


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True)
    return done.stdout.decode()


@pytest.fixture(autouse=True)
def quiet_git(tmp_path, monkeypatch):
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Test\n\temail = test@example.invalid\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


@pytest.fixture
def repo(tmp_path) -> Path:
    path = tmp_path / "orchard"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "CLAUDE.md").write_text("# Orchard agent\n\n## Rules\n\n- Be gentle.\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    return path


@pytest.fixture
def fake_bin(tmp_path, monkeypatch) -> Path:
    """A PATH holding git and a fake ``gh`` that records its arguments and prints a URL."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "gh.log"
    gh = bin_dir / "gh"
    gh.write_text(f'#!/bin/sh\necho "$@" >> {log}\necho https://github.example/orchard/pull/7\n')
    gh.chmod(gh.stat().st_mode | stat.S_IEXEC)
    git_dir = Path(subprocess.run(["which", "git"], capture_output=True, text=True).stdout.strip())
    (bin_dir / "git").symlink_to(git_dir)
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


def approve(tmp_path: Path, repo: Path, *extra: str):
    db = tmp_path / "q.db"
    with Store(db, project="orchard", plugins=fresh_plugin_manager()) as store:
        if not store.category_names():
            doc = pack_document("orchard", "1.0.0", {"ORCHARD_RULES": "intent"})
            store.packs.install(validate_pack(doc, source="t"))
        # The evidence: a memory of the project (queue evidence is checked against it).
        seen = store.memories.write("Frost split the pruned branches.", "ORCHARD_RULES").id
        filed = file_draft(
            store,
            ProposalDraft("claude_md", "a rule", [seen], {"note": "Never prune in frost."}, "test"),
            target=Target(repo=repo),
        )
    args = ["queue", "approve", str(filed.proposal_id), "--repo", str(repo), *extra]
    return CliRunner().invoke(
        cli,
        [*args, "--db", str(db), "--project", "orchard"],
        obj={"plugins": fresh_plugin_manager()},
    )


def test_open_pr_pushes_the_branch_and_opens_the_pull_request(tmp_path, repo, fake_bin):
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    git(repo, "remote", "add", "origin", str(remote))
    result = approve(tmp_path, repo, "--open-pr")
    assert result.exit_code == 0, result.output
    assert "opened the pull request: https://github.example/orchard/pull/7" in result.output
    branch = "memsdk/proposal-1"
    assert git(remote, "rev-parse", branch).strip() == git(repo, "rev-parse", branch).strip()
    called = (tmp_path / "gh.log").read_text()
    assert called.startswith(f"pr create --head {branch} --title memsdk: CLAUDE.md")
    assert "--body-file" in called


def test_without_a_remote_the_exact_commands_are_printed_and_it_exits_1(tmp_path, repo, fake_bin):
    result = approve(tmp_path, repo, "--open-pr")
    assert result.exit_code == 1
    assert "has no remote" in result.output
    assert f"(in {repo})" in result.output and "git push origin memsdk/proposal-1" in result.output
    assert "gh pr create --head memsdk/proposal-1" in result.output
    assert not (tmp_path / "gh.log").exists()


def test_without_open_pr_nothing_is_pushed_and_the_commands_are_printed(tmp_path, repo, fake_bin):
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    git(repo, "remote", "add", "origin", str(remote))
    result = approve(tmp_path, repo)
    assert result.exit_code == 0, result.output
    assert "gh pr create --head memsdk/proposal-1" in result.output
    assert not (tmp_path / "gh.log").exists()
    assert git(remote, "for-each-ref").strip() == ""
    assert os.environ["PATH"] == str(fake_bin)
