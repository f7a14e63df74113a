"""``memsdk queue``: the approval queue (list, show, approve, reject, edit, undo, detect, note)."""

from __future__ import annotations

import functools
import getpass
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import attrs
import click

from plugin_sdk.cli.common import ID, JSON_OPTION, echo_json, open_store, store_options
from plugin_sdk.errors import MemsdkError
from plugin_sdk.proposals import queue as q
from plugin_sdk.proposals.detect import file_draft, run_detectors
from plugin_sdk.proposals.filing import STATUSES, Proposal, ProposalDraft, get, list_proposals
from plugin_sdk.proposals.forge import open_pull_request, open_pull_request_commands
from plugin_sdk.proposals.render import render, render_diff
from plugin_sdk.proposals.target import SETTINGS_FILE, SKILLS_DIR, Target

F = TypeVar("F", bound=Callable[..., Any])


def _default_actor() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "user"


def actor_option(fn: F) -> F:
    return click.option(
        "--by",
        "actor",
        envvar="MEMSDK_ACTOR",
        show_envvar=True,
        default=_default_actor,
        show_default="your user name",
        help="Who is deciding (recorded in the proposal's history).",
    )(fn)


def repo_options(default: str) -> Callable[[F], F]:
    """``--repo`` and ``--base``: where file changes go (``default``: without --repo)."""

    def add(fn: F) -> F:
        fn = click.option(
            "--base", default="HEAD", show_default=True, help="The commit a new branch starts from."
        )(fn)
        return click.option(
            "--repo",
            type=click.Path(file_okay=False, exists=True),
            envvar="MEMSDK_REPO",
            show_envvar=True,
            help=f"The target git repository (default: {default}).",
        )(fn)

    return add


def target_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--repo``, ``--base`` and where drafts land in the repository, passed as ``target``."""

    @functools.wraps(fn)
    def with_target(
        *args: Any,
        repo: str | None,
        base: str,
        instructions_file: str | None,
        settings_file: str,
        skills_dir: str,
        **kwargs: Any,
    ) -> Any:
        target = Target(repo, instructions_file, settings_file, skills_dir, base)
        return fn(*args, target=target, **kwargs)

    options = [
        click.option(
            "--instructions-file",
            envvar="MEMSDK_INSTRUCTIONS_FILE",
            show_envvar=True,
            help="The agent's instructions file (default: CLAUDE.md, or AGENTS.md if only "
            "it exists).",
        ),
        click.option(
            "--settings-file",
            default=SETTINGS_FILE,
            show_default=True,
            help="The settings JSON whose permissions.allow takes allowlist entries.",
        ),
        click.option(
            "--skills-dir",
            default=SKILLS_DIR,
            show_default=True,
            help="Skills go in NAME/SKILL.md here.",
        ),
    ]
    command: Callable[..., Any] = with_target
    for option in reversed(options):
        command = option(command)
    return repo_options("the current directory")(command)


@click.group()
def queue() -> None:
    """The approval queue: changes that wait for a person.

    Detectors and the dreamer file proposals (memory entries, instructions-file
    edits, skills, allowlist entries); nothing is applied until you approve it.
    File changes are committed on a new branch of the target repository; your
    current branch, index and working tree are never touched.
    """


@queue.command(name="list")
@click.option(
    "--status",
    type=click.Choice([*STATUSES, "all"]),
    default="pending",
    show_default=True,
    help="Only proposals with this status.",
)
@store_options
@JSON_OPTION
def list_command(status: str, db: str | None, project: str | None, as_json: bool) -> None:
    """List the project's proposals, oldest first."""
    with open_store(db, project) as store:
        found = list_proposals(store, status=None if status == "all" else status)
    if as_json:
        echo_json([p.to_dict() for p in found])
        return
    if not found:
        click.echo(f"No {'' if status == 'all' else status + ' '}proposals.")
    for proposal in found:
        first = proposal.rationale.strip().splitlines()[0] if proposal.rationale.strip() else ""
        click.echo(
            f"{proposal.id:>5}  {proposal.status:<8}  {proposal.diff_type:<12}  "
            f"{proposal.source:<24}  {first[:80]}"
        )


@queue.command()
@click.argument("proposal_id", type=ID)
@store_options
@JSON_OPTION
def show(proposal_id: int, db: str | None, project: str | None, as_json: bool) -> None:
    """Show a proposal: its rationale, evidence, the diff, and its history."""
    with open_store(db, project) as store:
        proposal = get(store, proposal_id)
        if as_json:
            echo_json(
                {
                    "proposal": proposal.to_dict(),
                    "diff_text": render_diff(store, proposal),
                    "application": q.application(store, proposal_id),
                    "history": q.history(store, proposal_id),
                }
            )
            return
        click.echo(render(store, proposal), nl=False)


@queue.command()
@click.argument("proposal_id", type=ID)
@repo_options("the repository the proposal was made against")
@click.option(
    "--other-repo",
    is_flag=True,
    help="Apply a file change to --repo although the proposal was made against another one.",
)
@click.option("--branch", help="The new branch's name (default: memsdk/proposal-ID).")
@click.option(
    "--merge",
    is_flag=True,
    help="If the file changed since the proposal, try a three-way merge instead of failing.",
)
@click.option(
    "--open-pr",
    is_flag=True,
    help="Push the branch and open the pull request (gh, else glab) when the repository has "
    "a remote and one of them is on PATH; else print the commands.",
)
@actor_option
@store_options
@JSON_OPTION
def approve(
    proposal_id: int,
    repo: str | None,
    base: str,
    other_repo: bool,
    branch: str | None,
    merge: bool,
    open_pr: bool,
    actor: str,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Approve a proposal and apply it.

    A memory entry is written through the store (deduplicated). A file change
    (claude_md, skill, allowlist) is committed, alone, on a new branch of the
    repository it was made against (another one only with --other-repo); its
    pull-request description is written in that repository's git directory.
    With --open-pr the branch is pushed and the pull request opened (gh, else
    glab) when the repository has a remote and the command is on PATH;
    otherwise, or without --open-pr, the exact commands are printed (and with
    --open-pr a pull request that could not be opened exits 1; the approval
    stands). A failed apply marks the proposal failed, keeps nothing, and
    exits 1.
    """
    target = Target(repo=repo, base=base, branch=branch, merge=merge, other_repo=other_repo)
    with open_store(db, project) as store:
        proposal = q.approve(store, proposal_id, target=target, actor=actor)
        done = q.application(store, proposal_id)
    result = done["result"] if done else {}
    pull = open_pull_request(result) if open_pr and done and done["target"] == "git" else None
    if as_json:
        echo_json(
            {
                "proposal": proposal.to_dict(),
                "application": done,
                **({"pull_request": pull.to_dict()} if pull else {}),
            }
        )
    elif done and done["target"] == "git":
        click.echo(
            f"Applied proposal {proposal_id}: branch {result['branch']} "
            f"(commit {result['commit'][:12]}) in {result['repo']}"
        )
        click.echo(f"Pull-request description: {result['description']}")
        if pull is not None and pull.opened:
            click.echo(f"Pushed {result['branch']} and opened the pull request: {pull.url}")
        else:
            if pull is not None:
                click.echo(f"Pull request not opened: {pull.reason}. Run:", err=True)
            commands = (pull or open_pull_request_commands(result)).commands
            click.echo(f"Push it and open the pull request (in {result['repo']}):")
            for command in commands:
                click.echo(f"  {command}")
    else:
        what = "created" if result.get("created") else "updated"
        click.echo(f"Applied proposal {proposal_id}: memory {result.get('memory_id')} ({what})")
    if pull is not None and not pull.opened:
        click.get_current_context().exit(1)


@queue.command()
@click.argument("proposal_id", type=ID)
@click.option("--reason", default="", help="Why (recorded in the history).")
@actor_option
@store_options
@JSON_OPTION
def reject(
    proposal_id: int, reason: str, actor: str, db: str | None, project: str | None, as_json: bool
) -> None:
    """Reject a proposal. Nothing else changes."""
    with open_store(db, project) as store:
        proposal = q.reject(store, proposal_id, actor=actor, reason=reason)
    _done(proposal, "Rejected", as_json)


@queue.command()
@click.argument("proposal_id", type=ID)
@click.option(
    "--content", help="The new text (a memory's content, or the file's new text); - reads stdin."
)
@click.option(
    "--content-file",
    type=click.Path(dir_okay=False, exists=True),
    help="Read the new text from a file (instead of --content).",
)
@click.option("--category", help="A memory entry's category (turns a 'review' reply into a write).")
@click.option("--rationale", help="A new rationale.")
@actor_option
@store_options
@JSON_OPTION
def edit(
    proposal_id: int,
    content: str | None,
    content_file: str | None,
    category: str | None,
    rationale: str | None,
    actor: str,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Edit a pending proposal before deciding on it.

    With no option, opens $EDITOR on the text to change (a memory's content,
    a 'review' reply, or the file's new text). The history keeps the old diff.
    """
    if content is not None and content_file is not None:
        raise click.UsageError("give --content or --content-file, not both")
    if content == "-":
        content = sys.stdin.read()
    if content_file is not None:
        content = Path(content_file).read_text("utf-8")
    with open_store(db, project) as store:
        proposal = get(store, proposal_id)
        if content is None and category is None and rationale is None:
            content = click.edit(_editable(proposal))
            if content is None:
                click.echo("Nothing changed.")
                return
        diff = _edited(proposal, content, category)
        proposal = q.edit(store, proposal_id, diff=diff, rationale=rationale, actor=actor)
    _done(proposal, "Edited", as_json)


@queue.command()
@click.argument("proposal_id", type=ID)
@actor_option
@store_options
@JSON_OPTION
def undo(proposal_id: int, actor: str, db: str | None, project: str | None, as_json: bool) -> None:
    """Undo an applied proposal.

    A memory entry's rows go back exactly as they were (refused if they have
    changed since); a file change's branch is deleted if it still points at
    the proposal's commit.
    """
    with open_store(db, project) as store:
        proposal = q.undo(store, proposal_id, actor=actor)
    _done(proposal, "Undid", as_json)


@queue.command()
@target_options
@store_options
@JSON_OPTION
def detect(target: Target, db: str | None, project: str | None, as_json: bool) -> None:
    """Run the detectors (the detect_patterns hook) and file what they find.

    File drafts are made exact against the target repository at --base.
    """
    with open_store(db, project) as store:
        report = run_detectors(store, target=target)
    if as_json:
        echo_json(report.to_dict())
        return
    filed = ", ".join(str(i) for i in report.filed) or "none"
    click.echo(
        f"Filed {len(report.filed)} proposals ({filed}); {report.already_pending} already pending"
    )
    for skip in report.skipped:
        click.echo(f"Skipped a {skip['diff_type']} draft from {skip['source']}: {skip['reason']}")


@queue.command()
@click.argument("text")
@click.option("--section", help="The heading to add the note under (default: Notes from memory).")
@click.option("--rationale", default="a note filed by hand", show_default=True, help="Why.")
@click.option("evidence", "--evidence", type=ID, multiple=True, help="A memory id; repeatable.")
@target_options
@store_options
@JSON_OPTION
def note(
    text: str,
    section: str | None,
    rationale: str,
    evidence: tuple[int, ...],
    target: Target,
    db: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Propose a note for the instructions file (a claude_md proposal)."""
    draft_diff: dict[str, Any] = (
        {"note": text} if section is None else {"note": text, "section": section}
    )
    draft = ProposalDraft("claude_md", rationale, list(evidence), draft_diff, source="cli")
    with open_store(db, project) as store:
        filed = file_draft(store, draft, target=target)
    if as_json:
        echo_json(attrs.asdict(filed))
    elif filed.proposal_id is not None:
        click.echo(f"Filed proposal {filed.proposal_id}")
    elif filed.already_pending:
        click.echo("An identical proposal is already pending")
    else:
        click.echo(f"Not filed: {filed.reason}")


def _done(proposal: Proposal, verb: str, as_json: bool) -> None:
    if as_json:
        echo_json(proposal.to_dict())
    else:
        click.echo(f"{verb} proposal {proposal.id} ({proposal.status})")


def _editable(proposal: Proposal) -> str:
    diff = proposal.diff
    if proposal.diff_type != "memory_entry":
        return str(diff.get("after", ""))
    return str(diff.get("content", diff.get("reply", "")))


def _edited(proposal: Proposal, content: str | None, category: str | None) -> dict[str, Any] | None:
    """The new diff from the options (None: the diff stays as it is)."""
    if content is None and category is None:
        return None
    diff = dict(proposal.diff)
    if proposal.diff_type != "memory_entry":
        if category is not None:
            raise MemsdkError(
                f"proposal {proposal.id} is a {proposal.diff_type}: it has no category"
            )
        diff["after"] = content
        return diff
    if diff.get("action") == "review":
        if category is None or content is None:
            raise MemsdkError(
                f"proposal {proposal.id} asks for a review: give --category and --content "
                "to turn it into a write"
            )
        return {"action": "write", "category": category, "content": content.strip()}
    if category is not None:
        if diff.get("action") != "write":
            raise MemsdkError(f"a memory_entry {diff.get('action')} keeps its category")
        diff["category"] = category
    if content is not None:
        diff["content"] = content.strip()
    return diff
