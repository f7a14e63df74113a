"""Commit file changes on a new branch of a git repository, touching nothing else.

Everything goes through git's plumbing (the ``git`` program): blobs are
written with ``hash-object``, the tree is built in a temporary index
(``GIT_INDEX_FILE`` pointing into a temporary directory, filled by
``read-tree``), the commit is made with ``commit-tree`` and the branch with
``update-ref``, which refuses if the branch exists. The user's ``HEAD``,
current branch, index and working tree are never read or written. A failure
before ``update-ref`` leaves no ref (only unreachable objects, which
``git gc`` removes).
"""

from __future__ import annotations

import os
import posixpath
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

import attrs

from plugin_sdk.errors import GitError

# Variables that would point git at another repository, index or tree.
_REDIRECTS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_PREFIX",
    "GIT_NAMESPACE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
)
FALLBACK_IDENT = ("memsdk", "memsdk@localhost")
REGULAR = ("100644", "100755")  # the only modes memsdk reads and writes
LINK = "120000"
MAX_LINKS = 8


@attrs.frozen
class FileAt:
    """A file in a commit's tree: its mode, blob id and bytes."""

    mode: str
    blob: str
    data: bytes


def git_program() -> str:
    """The ``git`` executable; :class:`GitError` if there is none."""
    program = shutil.which("git")
    if program is None:
        raise GitError("git is not installed (or not on PATH); file proposals need it")
    return program


def check_path(path: str) -> str:
    """A repository-relative POSIX path, normalized; refuses escapes and ``.git``."""
    if not isinstance(path, str) or not path.strip():
        raise GitError("a file proposal needs a path inside the repository")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        raise GitError(f"path {path!r} holds a control character (NUL, newline...)")
    parts = path.split("/")
    if path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in parts):
        raise GitError(f"path {path!r} is not a plain relative path inside the repository")
    if parts[0] == ".git":
        raise GitError(f"path {path!r} is inside .git")
    return str(PurePosixPath(path))


def _parents(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


class Repo:
    """A git repository, used through plumbing only."""

    def __init__(self, path: str | Path) -> None:
        self.git = git_program()
        self.path = Path(path).expanduser().resolve()
        if not self.path.is_dir():
            raise GitError(f"{self.path} is not a directory")
        self._env = {k: v for k, v in os.environ.items() if k not in _REDIRECTS}
        self._env["GIT_TERMINAL_PROMPT"] = "0"
        try:
            inside = self.run("rev-parse", "--is-inside-work-tree", "--is-bare-repository")
        except GitError as error:
            raise GitError(f"{self.path} is not a git repository") from error
        if "true" not in inside.split():
            raise GitError(f"{self.path} is not a git repository")
        top = "--show-toplevel" if inside.split()[0] == "true" else "--absolute-git-dir"
        # the repository's top directory (the git directory of a bare one)
        self.root = Path(self.run("rev-parse", top).strip()).resolve()
        self.git_dir = Path(self.run("rev-parse", "--absolute-git-dir").strip())

    def run(
        self, *args: str, data: bytes | None = None, env: Mapping[str, str] | None = None
    ) -> str:
        """Run ``git -C repo ARGS``; its standard output, or :class:`GitError` with stderr."""
        return self.run_bytes(*args, data=data, env=env).decode("utf-8", "replace")

    def run_bytes(
        self, *args: str, data: bytes | None = None, env: Mapping[str, str] | None = None
    ) -> bytes:
        done = subprocess.run(
            [self.git, "-C", str(self.path), *args],
            input=data,
            capture_output=True,
            env={**self._env, **(env or {})},
            check=False,
        )
        if done.returncode != 0:
            message = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitError(f"git {args[0]}: {message[-1] if message else 'failed'}")
        return done.stdout

    def commit(self, ref: str) -> str | None:
        """The commit ``ref`` names, or None (an unknown ref, an unborn branch)."""
        try:
            return self.run(
                "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"
            ).strip()
        except GitError:
            return None

    def root_commit(self, commit: str) -> str:
        """The first of ``commit``'s root commits (those without a parent): the history's id."""
        return sorted(self.run("rev-list", "--max-parents=0", commit, "--").split())[0]

    def has_commit(self, commit: str) -> bool:
        try:
            self.run("cat-file", "-e", f"{commit}^{{commit}}")
        except GitError:
            return False
        return True

    def read(self, commit: str, path: str) -> FileAt | None:
        """The regular file at ``path`` in ``commit``'s tree, or None if there is none.

        Anything else at ``path`` (a symbolic link, a directory, a submodule),
        or a symbolic link on the way to it, is a :class:`GitError` naming it.
        """
        found = self.entry(commit, path)
        if found is None:
            for parent in _parents(path):
                above = self.entry(commit, parent)
                if above is not None and above[0] == LINK:
                    raise GitError(
                        f"{parent} is a symbolic link (to {self._link(above[2])}) in "
                        f"{commit[:12]}; {path} is not a file of the repository's own"
                    )
            return None
        mode, kind, blob = found
        if mode == LINK:
            target = self._link(blob)
            raise GitError(
                f"{path} is a symbolic link (to {target}) in {commit[:12]}, not a regular file; "
                f"memsdk changes regular files only: propose the change to {target}"
            )
        if kind != "blob" or mode not in REGULAR:
            raise GitError(f"{path} is a {kind} (mode {mode}) in {commit[:12]}, not a file")
        return FileAt(mode, blob, self.run_bytes("cat-file", "blob", blob))

    def entry(self, commit: str, path: str) -> tuple[str, str, str] | None:
        """``(mode, kind, id)`` of ``path`` in ``commit``'s tree, or None."""
        listing = self.run("ls-tree", "-z", "--full-tree", commit, "--", path)
        for line in listing.split("\0"):
            info, _, name = line.partition("\t")
            if name == path:
                mode, kind, blob = info.split()
                return mode, kind, blob
        return None

    def follow(self, commit: str, path: str) -> str:
        """Where ``path`` leads in ``commit``'s tree: the file its symbolic links point at.

        ``path`` itself when it is no link (or absent). A link that leaves the
        repository, or a loop, is a :class:`GitError`.
        """
        current = check_path(path)
        for _ in range(MAX_LINKS):
            found = self.entry(commit, current)
            if found is None or found[0] != LINK:
                return current
            target = self._link(found[2])
            joined = posixpath.normpath(posixpath.join(posixpath.dirname(current), target))
            if target.startswith("/") or joined == ".." or joined.startswith("../"):
                raise GitError(f"{current} is a symbolic link to {target}, outside the repository")
            current = check_path(joined)
        raise GitError(f"{path}: more than {MAX_LINKS} symbolic links in a row")

    def _link(self, blob: str) -> str:
        return self.run("cat-file", "blob", blob)

    def branch_exists(self, branch: str) -> bool:
        try:
            self.run("show-ref", "--verify", "--quiet", f"refs/heads/{branch}")
        except GitError:
            return False
        return True

    def check_branch(self, branch: str) -> str:
        """A valid new branch name (``git check-ref-format --branch``)."""
        try:
            self.run("check-ref-format", "--branch", branch)
        except GitError as error:
            raise GitError(f"{branch!r} is not a valid branch name") from error
        return branch

    def commit_files(
        self, parent: str, files: Mapping[str, tuple[str, bytes]], message: str
    ) -> str:
        """A commit on top of ``parent`` with ``files`` (path -> (mode, bytes)) replaced.

        Built in a temporary index; no ref moves.
        """
        with tempfile.TemporaryDirectory(prefix="memsdk-git-") as scratch:
            index = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
            self.run("read-tree", parent, env=index)
            for path, (mode, data) in files.items():
                blob = self.run("hash-object", "-w", "--no-filters", "--stdin", data=data).strip()
                self.run("update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}", env=index)
            tree = self.run("write-tree", env=index).strip()
            return self.run(
                "commit-tree",
                tree,
                "-p",
                parent,
                "-F",
                "-",
                data=message.encode("utf-8"),
                env=self._ident(),
            ).strip()

    def create_branch(self, branch: str, commit: str, reason: str) -> None:
        """Point a new branch at ``commit``; refuses (GitError) if the branch exists."""
        zero = ""  # update-ref's "must not exist yet"
        self.run("update-ref", "-m", reason, f"refs/heads/{branch}", commit, zero)

    def delete_branch(self, branch: str, commit: str) -> None:
        """Delete ``branch`` if it still points at ``commit`` (GitError otherwise)."""
        self.run("update-ref", "-d", f"refs/heads/{branch}", commit)

    def merge_text(self, current: bytes, base: bytes, other: bytes, path: str) -> tuple[bytes, int]:
        """Three-way merge of one file (``git merge-file``): the text and the conflict count."""
        with tempfile.TemporaryDirectory(prefix="memsdk-merge-") as scratch:
            names = []
            for label, data in (("current", current), ("base", base), ("other", other)):
                name = Path(scratch) / label
                name.write_bytes(data)
                names.append(str(name))
            done = subprocess.run(
                [
                    self.git,
                    "merge-file",
                    "-p",
                    "-L",
                    f"{path} (target)",
                    "-L",
                    f"{path} (proposal base)",
                    "-L",
                    f"{path} (proposal)",
                    *names,
                ],
                capture_output=True,
                env=self._env,
                check=False,
                cwd=scratch,
            )
        if done.returncode < 0 or done.returncode > 127:
            raise GitError(f"git merge-file: {done.stderr.decode('utf-8', 'replace').strip()}")
        return done.stdout, done.returncode

    def _ident(self) -> dict[str, str]:
        """memsdk's fallback identity, only where the repository has none configured."""
        extra: dict[str, str] = {}
        for role in ("AUTHOR", "COMMITTER"):
            try:
                self.run("var", f"GIT_{role}_IDENT")
            except GitError:
                extra[f"GIT_{role}_NAME"], extra[f"GIT_{role}_EMAIL"] = FALLBACK_IDENT
        return extra
