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
    shown = {m.id for m in view}
    lines, headers = [], []
    for m in view:
        groups = [c for c in store.composites.by_head(m.id) if c.type in ("sequence", "theme")]
        within = [c.head for c in store.composites.by_member(m.id) if c.head in shown]
        mark = ""
        if groups:
            group = min(groups, key=lambda c: (c.type != "sequence", c.id))
            mark = f" (header {m.id}: a {group.type} of {len(group.members)})"
            headers.append(m.id)
        elif within:
            mark = f" (under header {within[0]})"
        lines.append(f"- [{m.category}]{mark} {' '.join(m.content.split())}")
    user = f"# Transcript chunk\n{transcript}\n"
    if any(m.get("explicit") for m in messages):
        user += f"\n# Explicit requests\n{EXPLICIT_NOTE}\n"
    if lines:
        user += "\n# Already known (do not repeat)\n" + "\n".join(lines) + "\n"
    if headers:
        user += (
            "\nA new fact that belongs to one of the headers above (another step of its "
            'sequence, another detail of its theme) goes in a block with under="ID": '
            '<facts category="NAME" under="ID">.\n'
        )
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
