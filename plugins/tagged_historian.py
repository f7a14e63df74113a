"""Built-in historian: prompt from the store's criteria, tagged replies, admission by category."""

from __future__ import annotations

from plugin_sdk.plugin import (
    EXPLICIT_NOTE,
    Admission,
    Fact,
    Memory,
    ParsedReply,
    Prompt,
    Store,
    historian_system,
    hookimpl,
    parse_tagged,
    transcript_text,
)


@hookimpl(trylast=True)
def historian_prompt(store: Store, messages: list[dict[str, str]], view: list[Memory]) -> Prompt:
    transcript = transcript_text(messages)
    known = "\n".join(f"- [{m.category}] {' '.join(m.content.split())}" for m in view)
    user = f"# Transcript chunk\n{transcript}\n"
    if any(m.get("explicit") for m in messages):
        user += f"\n# Explicit requests\n{EXPLICIT_NOTE}\n"
    if known:
        user += f"\n# Already known (do not repeat)\n{known}\n"
    return Prompt("historian", historian_system(store), [{"role": "user", "content": user}])


@hookimpl(trylast=True)
def historian_parse(store: Store, reply: str) -> ParsedReply:
    return parse_tagged(reply, store.category_names())


@hookimpl(trylast=True)
def historian_admit(store: Store, fact: Fact) -> Admission:
    names = store.category_names()
    if fact.category in names:
        return Admission("write")
    return Admission(
        "quarantine",
        f"unknown category {fact.category!r}; the store's categories are {', '.join(names)}",
    )
