"""``memsdk queue`` end to end: list, show (the diff), edit, approve, undo, reject,
detect and note, against a store file and a real git repository; errors as one line."""

from __future__ import annotations

import json
import subprocess

import pytest
from click.testing import CliRunner

from plugin_sdk import Store
from plugin_sdk.cli import cli
from plugin_sdk.proposals.filing import propose
from plugin_sdk.testing import pack_document

RULES, NOTES = "ORCHARD_RULES", "ORCHARD_NOTES"


def git(repo, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, check=True, text=True
    ).stdout


@pytest.fixture
def run(tmp_path, monkeypatch):
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Test\n\temail = test@example.invalid\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    db = str(tmp_path / "cli.db")
    pack = tmp_path / "orchard.json"
    doc = pack_document("orchard", "1.0.0", {RULES: "intent", NOTES: "content"})
    doc["categories"][NOTES]["promotable"] = True
    pack.write_text(json.dumps(doc))

    def invoke(*args: str, input: str | None = None, ok: bool = True):
        result = CliRunner().invoke(
            cli,
            list(args),
            input=input,
            env={
                "MEMSDK_DB": db,
                "MEMSDK_PROJECT": "orchard",
                "MEMSDK_LOAD_PLUGINS": "",
                "MEMSDK_ACTOR": "ann",
            },
        )
        if ok:
            assert result.exit_code == 0, result.output
        return result

    invoke("init", "--pack", str(pack))
    invoke.db = db
    return invoke


@pytest.fixture
def repo(tmp_path):
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "CLAUDE.md").write_text("# Rules\n\n- Be gentle.\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    (path / "CLAUDE.md").write_text("# Rules\n\n- Be gentle.\n- unsaved\n")
    return path


def file_write(run, text: str) -> int:
    with Store(run.db, project="orchard") as store:
        proposal_id = propose(
            store,
            diff_type="memory_entry",
            rationale="seen every week",
            evidence=[],
            diff={"action": "write", "category": RULES, "content": text},
            source="dreamer:retrospective",
        )
    assert proposal_id is not None
    return proposal_id


def test_a_memory_entry_round_trip_show_edit_approve_undo(run):
    proposal_id = file_write(run, "Pick pears early.")
    listed = run("queue", "list").output
    assert f"{proposal_id}  pending   memory_entry" in listed and "seen every week" in listed
    shown = run("queue", "show", str(proposal_id)).output
    assert f"Write a memory in {RULES}:\n+ Pick pears early." in shown
    assert "filed    by dreamer:retrospective" in shown

    run("queue", "edit", str(proposal_id), "--content", "Pick pears before they ripen.")
    shown = json.loads(run("queue", "show", str(proposal_id), "--json").output)
    assert shown["proposal"]["diff"]["content"] == "Pick pears before they ripen."
    assert [e["event"] for e in shown["history"]] == ["filed", "edited"]
    assert shown["history"][-1]["actor"] == "ann"

    out = run("queue", "approve", str(proposal_id)).output
    assert out.startswith(f"Applied proposal {proposal_id}: memory ")
    memory_id = int(out.split("memory ")[1].split()[0])
    got = json.loads(run("memory", "get", str(memory_id), "--json").output)
    assert (got["category"], got["content"]) == (RULES, "Pick pears before they ripen.")
    assert "rows: memories" in run("queue", "show", str(proposal_id)).output

    undone = json.loads(run("queue", "undo", str(proposal_id), "--json").output)
    assert undone["status"] == "undone"
    assert "no memory with id" in run("memory", "get", str(memory_id), ok=False).output
    assert json.loads(run("queue", "list", "--status", "undone", "--json").output)[0]["id"] == (
        proposal_id
    )


def test_a_review_is_edited_into_a_write(run):
    with Store(run.db, project="orchard") as store:
        review = propose(
            store,
            diff_type="memory_entry",
            rationale="unparsed reply",
            evidence=[],
            diff={"action": "review", "reply": "maybe: wear gloves"},
            source="dreamer:retrospective",
        )
    assert "| maybe: wear gloves" in run("queue", "show", str(review)).output
    refused = run("queue", "approve", str(review), ok=False)
    assert refused.exit_code == 1 and "nothing to apply" in refused.output
    needs = run("queue", "edit", str(review), "--content", "Wear gloves.", ok=False)
    assert "give --category and --content" in needs.output
    run("queue", "edit", str(review), "--category", RULES, "--content", "Wear gloves.")
    assert "Applied proposal" in run("queue", "approve", str(review)).output


@pytest.mark.slow
def test_a_note_round_trip_against_a_git_repository(run, repo):
    head = git(repo, "rev-parse", "HEAD")
    status = git(repo, "status", "--porcelain")
    filed = json.loads(
        run("queue", "note", "Never prune in frost.", "--repo", str(repo), "--json").output
    )
    proposal_id = filed["proposal_id"]
    again = run("queue", "note", "Never prune in frost.", "--repo", str(repo)).output
    assert again == "An identical proposal is already pending\n"
    shown = run("queue", "show", str(proposal_id)).output
    assert "--- a/CLAUDE.md\n+++ b/CLAUDE.md\n" in shown
    assert "+## Notes from memory\n+\n+- Never prune in frost.\n" in shown

    out = run("queue", "approve", str(proposal_id)).output  # where it was made, by default
    assert f"branch memsdk/proposal-{proposal_id}" in out and "git push origin" in out
    description = repo.resolve() / ".git" / "memsdk" / "pull-requests"
    assert f"Pull-request description: {description}/memsdk-proposal-{proposal_id}.md\n" in out
    assert git(repo, "rev-parse", "HEAD") == head and git(repo, "status", "--porcelain") == status
    assert git(repo, "show", f"memsdk/proposal-{proposal_id}:CLAUDE.md").endswith(
        "- Never prune in frost.\n"
    )
    done = json.loads(run("queue", "show", str(proposal_id), "--json").output)["application"]
    assert done["result"]["branch"] == f"memsdk/proposal-{proposal_id}"

    second = json.loads(
        run("queue", "note", "Water after planting.", "--repo", str(repo), "--json").output
    )["proposal_id"]
    git(repo, "branch", f"memsdk/proposal-{second}")
    failed = run("queue", "approve", str(second), "--repo", str(repo), ok=False)
    assert failed.exit_code == 1
    assert failed.output == (
        f"Error: proposal {second} failed: branch memsdk/proposal-{second} already exists "
        f"in {repo.resolve()}\n"
    )
    assert (
        json.loads(run("queue", "list", "--status", "failed", "--json").output)[0]["id"] == second
    )


def test_detect_files_what_the_built_in_detector_finds(run):
    with Store(run.db, project="orchard") as store:
        facts = [store.memories.write(f"Fact {i}.", NOTES).id for i in range(3)]
        for _ in range(6):
            store.memories.record_retrievals([facts[0]])
        store.memories.record_retrievals(facts)
    out = run("queue", "detect").output
    assert out.startswith("Filed 1 proposals (1); 0 already pending")
    report = json.loads(run("queue", "detect", "--json").output)
    assert report == {"already_pending": 1, "filed": [], "skipped": []}


def test_wrong_ids_and_statuses_are_one_line_errors(run):
    proposal_id = file_write(run, "Label every graft.")
    missing = run("queue", "show", "999", ok=False)
    assert missing.exit_code == 1
    assert missing.output.startswith("Error: no proposal with id 999 in project ")
    run("queue", "reject", str(proposal_id), "--reason", "not now")
    for step in ("approve", "reject", "undo"):
        wrong = run("queue", step, str(proposal_id), ok=False)
        assert wrong.exit_code == 1 and wrong.output.count("\n") == 1
        assert wrong.output.startswith(f"Error: proposal {proposal_id} is rejected; only ")
    wrong = run("queue", "edit", str(proposal_id), "--content", "x", ok=False)
    assert "only pending proposals can be edited" in wrong.output
    assert run("queue", "list").output == "No pending proposals.\n"
    assert "rejected  memory_entry" in run("queue", "list", "--status", "all").output


def test_edit_takes_content_or_a_content_file_not_both(run, tmp_path):
    proposal_id = file_write(run, "Pick pears early.")
    text = tmp_path / "text.txt"
    text.write_text("Pick pears in August.\n")
    both = run(
        "queue", "edit", str(proposal_id), "--content", "x", "--content-file", str(text), ok=False
    )
    assert both.exit_code == 2 and "give --content or --content-file, not both" in both.output
    shown = json.loads(run("queue", "show", str(proposal_id), "--json").output)
    assert shown["proposal"]["diff"]["content"] == "Pick pears early."
    run("queue", "edit", str(proposal_id), "--content-file", str(text))
    shown = json.loads(run("queue", "show", str(proposal_id), "--json").output)
    assert shown["proposal"]["diff"]["content"] == "Pick pears in August."
