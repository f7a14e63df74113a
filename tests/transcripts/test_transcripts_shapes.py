"""Every transcript shape named in issue 18, from hand-made samples under tests/data/transcripts/."""

from __future__ import annotations

import json
from pathlib import Path

from plugin_sdk.transcripts import chunk_messages, detect_format, load_transcript, render
from plugin_sdk.transcripts.batch import expand

DATA = Path(__file__).parents[1] / "data" / "transcripts"
PROJECT = DATA / "claude-project"
SESSION = PROJECT / "9b2e7c41-0d5a-4f3e-8c2b-6a1d0e7f5c93.jsonl"
AGENT = SESSION.with_suffix("") / "subagents" / "agent-a3f9c21.jsonl"


def texts(path: Path) -> list[str]:
    return [m.text for m in load_transcript(path).messages]


def test_claude_code_follows_parent_uuid_past_a_rewind_and_a_compaction():
    said = "\n".join(texts(SESSION))
    assert "Actually use pytz" not in said and "Switching to pytz" not in said  # rewound away
    assert "Keep zoneinfo; pytz is deprecated here." in said
    # after /compact the chain goes on through logicalParentUuid: nothing before it is lost
    assert said.startswith("[command /model: opus]")
    assert said.endswith("Added tests/test_dst.py covering the March change; make check passes.")
    skipped = load_transcript(SESSION).report.skipped
    assert skipped["record on an abandoned branch (rewound)"] == 2
    assert skipped["compact summary (repeats earlier turns)"] == 1


def test_claude_code_harness_text_is_summarised_or_removed_and_counted():
    transcript = load_transcript(SESSION)
    said = "\n".join(m.text for m in transcript.messages)
    for harness in (
        "<command-name>",
        "<local-command-stdout>",
        "Set model to opus",
        "<system-reminder>",
        "todo list is empty",
        "[Request interrupted by user]",
        "API Error",
        "<user-memory-input>",
    ):
        assert harness not in said
    assert transcript.messages[0].text == "[command /model: opus]"
    assert transcript.messages[1].text == (
        "The harbor tide API returns times in local time, not UTC. Convert them at the edge, "
        "in api/tides.py."
    )
    skipped = transcript.report.skipped
    assert skipped["local command output"] == 1 and skipped["system reminder"] == 1
    assert skipped["interruption notice"] == 1
    assert skipped["API error message (written by Claude Code)"] == 1
    assert transcript.report.placeholders["command"] == 1


def test_claude_code_memory_input_is_an_explicit_request_to_remember():
    [explicit] = [m for m in load_transcript(SESSION).messages if m.explicit]
    assert explicit.text == "The staging harbor API key lives in 1Password, vault Ops."
    assert explicit.as_historian() == {
        "role": "user",
        "content": explicit.text,
        "explicit": "remember",
        "timestamp": explicit.timestamp,  # when it was said: the memory's occurred_at
    }
    assert explicit.timestamp
    # the historian reads it headed as a request to remember, and the budget counts that text
    assert render([explicit]).startswith("[user: remember this]\n")


def test_claude_code_steering_messages_are_kept_once():
    messages = load_transcript(SESSION).messages
    users = [m.text for m in messages if m.role == "user"]
    # typed while the agent worked: enqueued, then absorbed mid-turn (an attachment repeats it)
    assert users.count("and keep the old endpoint working until June") == 1
    # enqueued, then sent as an ordinary user record: kept once, as that record
    assert users.count("run make check when done") == 1
    report = load_transcript(SESSION).report
    assert report.skipped["queued message (recorded again)"] == 2
    assert report.skipped["queue operation 'dequeue'"] == 2


def test_claude_code_sub_agent_files_are_found_beside_their_session():
    named = expand([str(SESSION)])
    assert [s.path for s in named] == [SESSION, AGENT]
    assert [s.named for s in named] == [True, False]
    folder = expand([str(PROJECT)])  # a folder: every transcript under it, not the .meta.json
    assert sorted(s.path for s in folder) == sorted([SESSION, AGENT])
    globbed = expand([str(PROJECT / "*.jsonl")])
    assert [s.path for s in globbed] == [SESSION, AGENT]
    agent = load_transcript(AGENT)
    assert {m.conversation for m in agent.messages} == {
        "9b2e7c41-0d5a-4f3e-8c2b-6a1d0e7f5c93 sidechain a3f9c21"
    }
    assert [m.role for m in agent.messages] == ["user", "assistant", "tool", "assistant"]


def test_openai_responses_items_are_understood():
    transcript = load_transcript(DATA / "openai-responses.json")
    assert [(m.role, m.text) for m in transcript.messages] == [
        ("user", "Deploy the harbor API to staging and tell me the version."),
        ("assistant", '[tool call deploy: service="harbor-api", env="staging"]'),
        ("tool", '[tool result deploy]\n{"ok": true, "version": "2.14.0"}'),
        ("assistant", "Deployed harbor-api 2.14.0 to staging."),
    ]
    assert dict(transcript.report.skipped) == {
        "developer message": 1,
        "reasoning item": 1,
        "item type 'web_search_call'": 1,
    }


def test_chatgpt_export_follows_current_node_through_the_mapping_tree():
    path = DATA / "chatgpt-conversations.json"
    assert detect_format(path) == "chatgpt-export"
    transcript = load_transcript(path)
    bridge = [m for m in transcript.messages if m.conversation == "6818a0c2-bridge"]
    assert [(m.role, m.text) for m in bridge] == [
        ("user", "What is the clearance under the harbor bridge at high tide?"),
        ("assistant", "It is 31.5 m at mean high water springs."),  # not the regenerated one
        ("user", "Remember that my boat's mast is 14 m."),
        ("assistant", '[tool call bio: content="Mast height 14 m"]'),
        ("tool", "[tool result bio]\nModel set context updated."),
        ("assistant", "Noted: your mast is 14 m, well under the bridge."),
    ]
    assert bridge[0].key == "n1" and bridge[0].timestamp == "2025-05-02T10:00:10.000Z"
    slipway = [m.text for m in transcript.messages if m.conversation == "6818b111-slipway"]
    assert slipway[0].endswith("slipway.\n[image]")
    assert transcript.report.conversations == 2
    assert dict(transcript.report.skipped) == {
        "hidden message": 1,
        "message on another branch (regenerated or edited)": 1,
        "reasoning": 1,
    }


def test_one_conversation_of_a_chatgpt_export_reads_too(tmp_path):
    [conversation, _] = json.loads((DATA / "chatgpt-conversations.json").read_text("utf-8"))
    single = tmp_path / "one.json"
    single.write_text(json.dumps(conversation), "utf-8")
    assert len(texts(single)) == 6


def test_every_sample_chunks_under_a_small_budget():
    from plugin_sdk.store.tokens import default_counter

    for path in (
        SESSION,
        AGENT,
        DATA / "openai-responses.json",
        DATA / "chatgpt-conversations.json",
    ):
        chunks = chunk_messages(load_transcript(path).messages, default_counter(), 120)
        assert chunks and all(chunk.tokens <= 120 for chunk in chunks)
