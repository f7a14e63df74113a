#!/usr/bin/env python3
"""Validate recall.json and print a summary.

Hard checks (exit 1 on failure): schema shape, unique ids, id prefixes,
evidence ids exist and belong to the question's conversation, session dates
are ISO-8601 UTC and increase, session/turn counts, allowed types and splits,
split assigned per conversation, minimum counts (>= 500 questions, every
type >= 60).

Soft checks (reported, never fatal): questions whose answer shares no content
word with its evidence turns (expected for temporal questions, whose answer
comes from the session date), and questions that copy a 5-word run from
their evidence.

Usage: python3 check_recall.py [path/to/recall.json] [-v]
"""
import collections
import datetime
import json
import os
import re
import sys

TYPES = ("single", "multi-hop", "temporal", "entity")
SPLITS = ("tune", "test")
KINDS = ("dialog", "ops")
MIN_QUESTIONS = 500
MIN_PER_TYPE = 60

STOP = set("""a an the and or but of to in on at for with by from is are was
were be been it its this that these those he she they them his her their him
i me my we our you your what which who whom when where why how did do does
has have had not no yes so as up out about into than then there here just
one two after before over also ago some any all""".split())

errors = []


def err(msg):
    errors.append(msg)


def words(text):
    return re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower())


def content(text):
    return {w for w in words(text) if w not in STOP and len(w) > 1}


def parse_date(s):
    if not isinstance(s, str) or not re.fullmatch(
            r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", s):
        return None
    try:
        return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return None


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    verbose = "-v" in sys.argv[1:]
    path = args[0] if args else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "recall.json")
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)

    for key in ("version", "description", "conversations", "questions"):
        if key not in doc:
            err("top level: missing %r" % key)
    if doc.get("version") != 1:
        err("version must be 1")

    turns = {}          # turn id -> (conversation id, turn)
    session_of = {}     # turn id -> session
    conv_ids = set()
    session_ids = set()
    kinds = collections.Counter()
    nsessions = 0
    for c in doc.get("conversations", []):
        cid = c.get("id")
        if not isinstance(cid, str) or cid in conv_ids:
            err("conversation id missing or duplicate: %r" % cid)
            continue
        conv_ids.add(cid)
        if c.get("kind") not in KINDS:
            err("%s: bad kind %r" % (cid, c.get("kind")))
        kinds[c.get("kind")] += 1
        speakers = c.get("speakers")
        if not isinstance(speakers, list) or len(speakers) < 2:
            err("%s: speakers must list at least two names" % cid)
            speakers = []
        sessions = c.get("sessions", [])
        if not 4 <= len(sessions) <= 8:
            err("%s: %d sessions (want 4-8)" % (cid, len(sessions)))
        prev = None
        for s in sessions:
            nsessions += 1
            sid = s.get("id")
            if not isinstance(sid, str) or not sid.startswith(cid + "s") \
                    or sid in session_ids:
                err("%s: bad or duplicate session id %r" % (cid, sid))
            session_ids.add(sid)
            d = parse_date(s.get("date"))
            if d is None:
                err("%s: bad date %r" % (sid, s.get("date")))
            elif prev is not None and d <= prev:
                err("%s: date not after previous session" % sid)
            prev = d or prev
            ts = s.get("turns", [])
            if not 12 <= len(ts) <= 30:
                err("%s: %d turns (want 12-30)" % (sid, len(ts)))
            for t in ts:
                tid = t.get("id")
                if not isinstance(tid, str) or not tid.startswith(str(sid) + "t") \
                        or tid in turns:
                    err("%s: bad or duplicate turn id %r" % (sid, tid))
                    continue
                if t.get("speaker") not in speakers:
                    err("%s: speaker %r not in speakers" % (tid, t.get("speaker")))
                if not isinstance(t.get("text"), str) or not t["text"].strip():
                    err("%s: empty text" % tid)
                turns[tid] = (cid, t)
                session_of[tid] = sid

    by_type = collections.Counter()
    by_split = collections.Counter()
    by_type_split = collections.Counter()
    by_conv = collections.Counter()
    conv_split = {}
    qids = set()
    unsupported = []
    copied = []
    cross_session = 0
    for q in doc.get("questions", []):
        qid = q.get("id")
        if not isinstance(qid, str) or not re.fullmatch(r"q\d{4,}", qid) \
                or qid in qids:
            err("bad or duplicate question id %r" % qid)
        qids.add(qid)
        cid = q.get("conversation")
        if cid not in conv_ids:
            err("%s: unknown conversation %r" % (qid, cid))
        for key in ("question", "answer"):
            if not isinstance(q.get(key), str) or not q[key].strip():
                err("%s: empty %s" % (qid, key))
        if not q.get("question", "").rstrip().endswith("?"):
            err("%s: question does not end with '?'" % qid)
        typ, split = q.get("type"), q.get("split")
        if typ not in TYPES:
            err("%s: bad type %r" % (qid, typ))
        if split not in SPLITS:
            err("%s: bad split %r" % (qid, split))
        if cid in conv_split and conv_split[cid] != split:
            err("%s: conversation %s appears in both splits" % (qid, cid))
        conv_split.setdefault(cid, split)
        ev = q.get("evidence")
        if not isinstance(ev, list) or not ev:
            err("%s: evidence must be a non-empty list" % qid)
            ev = []
        if len(set(ev)) != len(ev):
            err("%s: duplicate evidence ids" % qid)
        for e in ev:
            if e not in turns:
                err("%s: evidence %r does not exist" % (qid, e))
            elif turns[e][0] != cid:
                err("%s: evidence %r is from another conversation" % (qid, e))
        if typ == "multi-hop" and len(ev) < 2:
            err("%s: multi-hop question needs 2+ evidence turns" % qid)
        ev_text = " ".join(turns[e][1]["text"] for e in ev if e in turns)
        if typ == "multi-hop" and len({session_of.get(e) for e in ev}) > 1:
            cross_session += 1
        if typ != "temporal" and not (content(q.get("answer", "")) & content(ev_text)):
            unsupported.append(qid)
        qw, ew = words(q.get("question", "")), " ".join(words(ev_text))
        for i in range(len(qw) - 4):
            if " ".join(qw[i:i + 5]) in ew:
                copied.append(qid)
                break
        by_type[typ] += 1
        by_split[split] += 1
        by_type_split[(typ, split)] += 1
        by_conv[cid] += 1

    total = len(qids)
    if total < MIN_QUESTIONS:
        err("only %d questions (need >= %d)" % (total, MIN_QUESTIONS))
    for t in TYPES:
        if by_type[t] < MIN_PER_TYPE:
            err("only %d %s questions (need >= %d)" % (by_type[t], t, MIN_PER_TYPE))
    for s in SPLITS:
        if by_split[s] == 0:
            err("no %s questions" % s)

    print("file: %s (%d bytes)" % (path, os.path.getsize(path)))
    print("conversations: %d (%s)" % (len(conv_ids), ", ".join(
        "%s %d" % kv for kv in sorted(kinds.items()))))
    print("sessions: %d   turns: %d" % (nsessions, len(turns)))
    print("questions: %d" % total)
    print("  %-10s %6s %6s %6s" % ("type", "tune", "test", "all"))
    for t in TYPES:
        print("  %-10s %6d %6d %6d  (%.0f%%)" % (
            t, by_type_split[(t, "tune")], by_type_split[(t, "test")],
            by_type[t], 100.0 * by_type[t] / max(total, 1)))
    print("  %-10s %6d %6d %6d" % ("all", by_split["tune"], by_split["test"], total))
    print("split by conversation: tune=%s test=%s" % (
        ",".join(sorted(c for c, s in conv_split.items() if s == "tune")),
        ",".join(sorted(c for c, s in conv_split.items() if s == "test"))))
    print("questions per conversation: " + ", ".join(
        "%s %d" % kv for kv in sorted(by_conv.items())))
    print("multi-hop questions spanning 2+ sessions: %d" % cross_session)
    print("soft: non-temporal answers sharing no word with evidence: %d%s" % (
        len(unsupported), (" " + " ".join(unsupported)) if verbose else ""))
    print("soft: questions copying a 5-word run from evidence: %d%s" % (
        len(copied), (" " + " ".join(copied)) if verbose else ""))
    if errors:
        print("\nFAILED with %d error(s):" % len(errors))
        for e in errors[:50]:
            print("  " + e)
        sys.exit(1)
    print("\nOK")


if __name__ == "__main__":
    main()
