"""Project identity: ``git:<root commit>`` inside a repository, else ``path:<dir>``."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from plugin_sdk import Store, project_for

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture(autouse=True)
def isolated_git(tmp_path, monkeypatch):
    """No repository above tmp_path, no user or system git config."""
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.resolve()))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "test@example.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "test@example.invalid")


def git(cwd, *args) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "src" / "deep").mkdir(parents=True)
    git(root, "init", "-q")
    (root / "README").write_text("hello\n")
    git(root, "add", "README")
    git(root, "-c", "commit.gpgsign=false", "commit", "-q", "-m", "first")
    return root


def test_git_repository_is_identified_by_its_root_commit(repo):
    sha = git(repo, "rev-list", "--max-parents=0", "HEAD")
    assert len(sha) == 40
    assert project_for(repo) == f"git:{sha}"
    assert project_for(str(repo)) == f"git:{sha}"


def test_subdirectory_and_later_commits_keep_the_id(repo):
    expected = project_for(repo)
    assert project_for(repo / "src" / "deep") == expected
    (repo / "more").write_text("more\n")
    git(repo, "add", "more")
    git(repo, "-c", "commit.gpgsign=false", "commit", "-q", "-m", "second")
    assert project_for(repo / "src") == expected


def test_a_clone_has_the_same_id(repo, tmp_path):
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    assert project_for(clone) == project_for(repo)


def test_a_plain_directory_is_identified_by_its_resolved_path(tmp_path):
    plain = tmp_path / "plain" / "dir"
    plain.mkdir(parents=True)
    assert project_for(plain) == f"path:{plain.resolve()}"
    assert project_for(plain / ".." / "dir") == f"path:{plain.resolve()}"


def test_a_repository_without_commits_falls_back_to_the_path(tmp_path):
    empty = tmp_path / "empty-repo"
    empty.mkdir()
    git(empty, "init", "-q")
    assert project_for(empty) == f"path:{empty.resolve()}"


def test_store_defaults_its_project_to_the_current_directory(repo, tmp_path, monkeypatch):
    monkeypatch.chdir(repo / "src")
    with Store(tmp_path / "m.db") as store:
        assert store.project == project_for(repo)
