"""Built-in historian: prompt from the store's criteria, tagged replies, admission by category."""

from __future__ import annotations

from typing import Any

from plugin_sdk import hookimpl
from plugin_sdk.model.prompts import historian_system
from plugin_sdk.model.tagged import parse_tagged
from plugin_sdk.plugin.records import Admission, Fact, ParsedReply, Prompt


@hookimpl(trylast=True)
def historian_prompt(store: Any, messages: list[dict[str, str]], view: list[Any]) -> Prompt:
    transcript = "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)
    known = "\n".join(f"- [{m.category}] {' '.join(m.content.split())}" for m in view)
    user = f"# Transcript chunk\n{transcript}\n"
    if known:
        user += f"\n# Already known (do not repeat)\n{known}\n"
    return Prompt("historian", historian_system(store), [{"role": "user", "content": user}])


@hookimpl(trylast=True)
def historian_parse(store: Any, reply: str) -> ParsedReply:
    return parse_tagged(reply)


@hookimpl(trylast=True)
def historian_admit(store: Any, fact: Fact) -> Admission:
    names = store.category_names()
    if fact.category in names:
        return Admission("write")
    return Admission(
        "quarantine",
        f"unknown category {fact.category!r}; the store's categories are {', '.join(names)}",
    )
