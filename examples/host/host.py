"""A complete small host: a chat loop with long-term memory, and no network.

Run it with memsdk installed::

    python examples/host/host.py              # a temporary store
    python examples/host/host.py --db m.db    # keep the store; run again to see it remember

It plays two scripted sessions with a toy model and does what a real host does
(docs/host-guide.md explains each step):

1. opens the store with its model, installing the pack next to this file if the
   store does not have it yet;
2. at session start, injects the memory block into the model's system prompt
   (recorded under a session id);
3. every few turns, and at the end, runs the historian on the turns it has not
   seen yet, and fragments long memories into a header and details;
4. mid-session, injects the delta: only what changed since the block;
5. when the model asks for a header's details, expands it and answers;
6. between sessions, runs the dreamer's maintenance tasks.

The toy model stands in for an LLM. It gets the same prompts an LLM would, and
answers the historian by reading the categories from the historian's system
prompt (never from this file), so it works with any pack.
"""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path

from plugin_sdk import (
    Dreamer,
    Prompt,
    Store,
    delta,
    expand,
    inject,
    open_store,
    run_historian,
)
from plugin_sdk.composites.fragment import fragment

PACK = Path(__file__).with_name("assistant.toml")
PROJECT = "billing-demo"
BUDGET = 1000
HISTORIAN_EVERY = 4  # messages
LONG_MEMORY_TOKENS = 30  # longer memories are split into a header and details
SYSTEM = "You are a helpful assistant. Follow the directives in the memory block."

SESSIONS = [
    [
        "Hi! I'm setting up the billing service today.",
        "Remember: always run the tests with `make check` before a commit.",
        "Remember: the billing service listens on port 8081.",
        "Remember: to cut a release of billing:\n"
        "1. Bump the version in pyproject.toml.\n"
        "2. Run `make check` and fix what fails.\n"
        "3. Tag the commit vX.Y.Z and push the tag.",
        "Remember: never push to main directly.",
        "Thanks, that's all for today.",
    ],
    [
        "Which port does billing listen on?",
        "How do I cut a release?",
        "Remember: the staging database is billing-stg.",
        "Bye!",
    ],
]


class ToyModel:
    """A deterministic stand-in for an LLM: ``complete(prompt) -> str | None``.

    ``None`` means "no answer" and memsdk falls back to its model-free path
    (classify by rules, merge by similarity, summaries from the title line).
    """

    def complete(self, prompt: Prompt) -> str | None:
        if prompt.purpose == "historian":
            return self.historian(prompt)
        if prompt.purpose == "chat":
            return self.chat(prompt)
        return None

    def historian(self, prompt: Prompt) -> str:
        # The categories and their kinds come from the prompt, as for a real model.
        kinds = dict(re.findall(r"^## (\S+?)(?: \(.*\))?: (intent|content)$", prompt.system, re.M))
        first = {kind: name for name, kind in reversed(list(kinds.items()))}
        chunk = prompt.messages[-1]["content"].split("# Already known")[0]
        facts: dict[str, list[str]] = {}
        for said in re.findall(r"^\[user\]\nRemember: (.*?)(?=\n\n\[|\Z)", chunk, re.M | re.S):
            said = said.strip()
            kind = "intent" if re.match(r"(always|never)\b", said, re.I) else "content"
            lines = said.splitlines()
            fact = "\n  ".join([lines[0][0].upper() + lines[0][1:], *lines[1:]])
            facts.setdefault(first[kind], []).append(fact)
        if not facts:
            return "<no-facts/>"
        return "\n".join(
            f'<facts category="{name}">\n' + "".join(f"- {f}\n" for f in items) + "</facts>"
            for name, items in facts.items()
        )

    def chat(self, prompt: Prompt) -> str:
        last = prompt.messages[-1]["content"]
        if last.startswith("<memory-details"):
            steps = re.findall(r"^- \[\d+\] (.*)$", last, re.M)
            return "From memory: " + " ".join(step.strip() for step in steps)
        if last.startswith("Remember:"):
            return "Noted."
        # Answer from the memory line sharing the most words with the question.
        asked = _stems(last) - {"which", "does", "thank"}
        lines = re.findall(r"^- \[(\d+)(: [^\]]*)?\] (.*)$", prompt.system, re.M)
        score, memory_id, note, text = max(
            ((len(asked & _stems(text)), memory_id, note, text) for memory_id, note, text in lines),
            key=lambda found: found[0],
            default=(0, "", "", ""),
        )
        if not score:
            return "OK."
        if note.endswith("details"):
            return f"EXPAND {memory_id}"  # the model asks for the header's details
        return f"From memory [{memory_id}]: {text}"


def _stems(text: str) -> set[str]:
    return {word[:5] for word in re.findall(r"[a-z]{4,}", text.lower())}


class Host:
    """One chat session at a time over one store."""

    def __init__(self, store: Store, model: ToyModel) -> None:
        self.store = store
        self.model = model

    def session(self, session_id: str, script: list[str]) -> None:
        print(f"== {session_id}")
        block = inject(self.store, budget=BUDGET, session=session_id)
        print(f"memory block: {block.tokens}/{BUDGET} tokens, {len(block.shown)} memories shown")
        print(block.text or f"({block.note})")
        system = f"{SYSTEM}\n\n{block.text}"
        transcript: list[dict[str, str]] = []
        seen = 0  # messages the historian has had
        for said in script:
            transcript.append({"role": "user", "content": said})
            print(f"user: {said.splitlines()[0]}")
            reply = self.ask(system, transcript)
            transcript.append({"role": "assistant", "content": reply})
            print(f"assistant: {reply}")
            if len(transcript) - seen >= HISTORIAN_EVERY:
                seen = self.remember(transcript, seen)
                change = delta(self.store, session_id)
                if change.text:
                    print(f"delta: {len(change.new)} new, {len(change.updated)} updated")
                    print(change.text)
                    system += "\n\n" + change.text  # the cached prefix stays as it was
        self.remember(transcript, seen)

    def ask(self, system: str, transcript: list[dict[str, str]]) -> str:
        reply = self.model.complete(Prompt("chat", system, transcript))
        match = re.fullmatch(r"EXPAND (\d+)", reply or "")
        if match:  # the model asked for a header's details: answer, then ask again
            details = expand(self.store, int(match[1]), budget=300)
            print(f"(expanding [{match[1]}]: {len(details.shown)} details)")
            followup = [*transcript, {"role": "user", "content": details.text}]
            reply = self.model.complete(Prompt("chat", system, followup))
        return reply or "..."

    def remember(self, transcript: list[dict[str, str]], seen: int) -> int:
        """Give the historian the messages it has not seen; return how many it has seen."""
        if seen == len(transcript):
            return seen
        report = run_historian(self.store, transcript[seen:])
        print(
            f"historian: {len(report.written)} written, {len(report.folded)} folded, "
            f"{len(report.quarantined)} quarantined"
        )
        for memory_id in report.written:
            memory = self.store.memories.get(memory_id)
            if (memory.token_count or 0) > LONG_MEMORY_TOKENS:
                split = fragment(self.store, memory_id)
                print(
                    f"fragmented [{memory_id}] into header [{split.header}] and {len(split.details)} details"
                )
        return len(transcript)

    def dream(self) -> None:
        for report in Dreamer(self.store).run():
            state = "done" if report.finished_pass else "paused"
            print(f"dreamer: {report.task} handled {report.handled} ({state})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="store file (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        model = ToyModel()
        store = open_store(
            args.db or Path(scratch) / "memory.db",
            project=PROJECT,
            model=model.complete,
            packs=[PACK],
        )
        with store:
            host = Host(store, model)
            for number, script in enumerate(SESSIONS, 1):
                host.session(f"session-{number}", script)
                host.dream()
            counts = store.memories.counts()
            print("== store")
            for category in store.category_names():
                print(f"{category}: {counts.get(category, {}).get('active', 0)} active")


if __name__ == "__main__":
    main()
