#!/usr/bin/env python3
"""Build recall.json from the hand-written conversation sources in src/.

Every conversation lives in src/cNN.txt, written by hand in a small line format:

    = c01 dialog Maya Tom          header: id, kind (dialog|ops), the two speakers
    @ 2026-01-08T19:05:00Z         starts a new session with that date
    M: {label} text of the turn    a turn; the letter is the speaker's initial,
                                   the optional {label} lets questions point at it
    T: ~                           a short filler turn drawn from a fixed pool
                                   (~ reaction, ~- sympathy, ~? prompt, ~ok,
                                   ~hi greeting, ~bye sign-off)
    ? s | question | answer | label1,label2
                                   a question: s=single, m=multi-hop,
                                   t=temporal, e=entity; evidence by label

Output is deterministic: filler choice uses random.Random seeded per session id.
Run:  python3 make_recall.py   (writes recall.json next to this script)
"""
import json
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "src")
OUT = os.path.join(HERE, "recall.json")

# Conversations whose questions form the tuning split; all others are test.
TUNE = {"c01", "c02", "c03", "c09", "c10"}

TYPES = {"s": "single", "m": "multi-hop", "t": "temporal", "e": "entity"}

FILLER = {
    "dialog": {
        "~": [
            "Oh nice!", "That's awesome", "Haha love it", "Nice one", "Ooh",
            "Ha, that's so you", "Wow, good for you", "That sounds great",
            "Amazing", "lol", "Oh that's fun", "Yesss", "Very cool", "Haha ok",
            "Oh wow", "Huh, interesting", "Ha! classic", "Nice, nice",
            "Good to hear", "Oh sweet", "Ha, I can totally picture it",
            "Honestly that's great", "Love that for you", "Cool cool",
            "oh neat", "hah yeah", "Right?", "Makes sense", "No way, really?",
            "Omg", "That's adorable", "Ha, fair", "Oh I love that",
            "Okay that's actually cool", "Hehe", "Oh fun!",
        ],
        "~-": [
            "Oh no, I'm sorry", "Ugh, that's rough", "Yikes", "Oof",
            "That sounds stressful", "Oh man", "Ugh I hate that",
            "Sorry to hear that", "That's the worst", "Aw, hang in there",
            "Oh no!", "Damn", "That's a lot to deal with", "Ouch",
            "Sending hugs", "Ugh, poor you", "Oh that sucks", "Noooo",
        ],
        "~?": [
            "Oh? Tell me more", "Wait, what happened?", "And?", "How come?",
            "Go on", "Ooh, details please", "What do you mean?",
            "Really? How so?", "Spill", "How did that go?",
            "So what's the plan?", "Wait, since when?", "Oh yeah? How's that going?",
            "Ooh what kind?", "Tell me everything",
        ],
        "~ok": [
            "Okay", "Sure", "Sounds good", "Deal", "Yep", "Fair enough",
            "Got it", "Will do", "Haha okay", "Alright", "Yeah, true",
            "Totally", "Mhm",
        ],
        "~hi": [
            "Hey! How are you?", "Hiii", "Hey you", "Hi! It's been a while",
            "Heyyy", "Morning!", "Hey, got a minute?", "Yo", "Hi hi",
            "Hey stranger", "Hello hello", "Hey! You around?",
        ],
        "~bye": [
            "Talk soon!", "Ok gotta run, bye!", "Night!", "Catch you later",
            "Bye! 👋", "ttyl", "Let's chat again soon", "Take care!",
            "Okay, later!", "Speak soon x", "Bye bye", "Night night",
        ],
    },
    "ops": {
        "~": [
            "nice", "good call", "sgtm", "cool", "👍", "perfect", "great",
            "love it", "nice work", "good stuff", "oh nice", "that helps",
            "makes sense", "+1", "neat",
        ],
        "~-": [
            "ugh", "oof", "that's painful", "yikes", "classic",
            "of course it did", "sigh", "not great", "ouch", "fun times",
            "ugh, again?", "that's rough",
        ],
        "~?": [
            "what happened?", "why?", "details?", "how so?", "which one?",
            "context?", "how bad?", "and?", "wait, why?", "say more?",
        ],
        "~ok": [
            "ack", "ok", "roger", "thanks", "ty", "yep", "agreed", "k",
            "got it", "will do", "ok, noted", "fair", "sure",
        ],
        "~hi": [
            "morning", "hey, got a sec?", "hi", "hey", "o/",
            "morning! quick one", "hey there", "hiya",
        ],
        "~bye": [
            "thanks, ttyl", "ok heading out", "cheers", "ok, thanks!",
            "later", "signing off", "ttyl", "thx, bye",
        ],
    },
}

TURN_RE = re.compile(r"^([A-Z]):\s*(.*)$")
LABEL_RE = re.compile(r"^\{([A-Za-z0-9_]+)\}\s*(.*)$")


def die(msg):
    sys.exit("make_recall: " + msg)


def parse_file(path):
    conv = None
    initials = {}
    labels = {}
    questions = []
    rng = None
    used = set()
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    for n, raw in enumerate(lines, 1):
        line = raw.strip()
        where = "%s:%d" % (os.path.basename(path), n)
        if not line or line.startswith("#"):
            continue
        if line.startswith("= "):
            parts = line[2:].split()
            cid, kind, speakers = parts[0], parts[1], parts[2:]
            conv = {"id": cid, "kind": kind, "speakers": speakers, "sessions": []}
            initials = {s[0]: s for s in speakers}
            if len(initials) != len(speakers):
                die(where + ": speaker initials clash")
            continue
        if conv is None:
            die(where + ": content before header")
        if line.startswith("@ "):
            sid = "%ss%d" % (conv["id"], len(conv["sessions"]) + 1)
            conv["sessions"].append({"id": sid, "date": line[2:].strip(), "turns": []})
            rng = random.Random("recall:" + sid)
            used = set()
            continue
        if line.startswith("? "):
            parts = [p.strip() for p in line[2:].split("|")]
            if len(parts) != 4 or parts[0] not in TYPES:
                die(where + ": bad question line")
            questions.append((where, parts))
            continue
        m = TURN_RE.match(line)
        if not m:
            die(where + ": cannot parse: " + line)
        init, text = m.group(1), m.group(2).strip()
        if init not in initials:
            die(where + ": unknown speaker " + init)
        if not conv["sessions"]:
            die(where + ": turn before first session")
        sess = conv["sessions"][-1]
        label = None
        lm = LABEL_RE.match(text)
        if lm:
            label, text = lm.group(1), lm.group(2).strip()
        if text in FILLER[conv["kind"]]:
            pool = [x for x in FILLER[conv["kind"]][text] if x not in used]
            text = rng.choice(pool)
            used.add(text)
        elif text.startswith("~"):
            die(where + ": unknown filler " + text)
        tid = "%st%02d" % (sess["id"], len(sess["turns"]) + 1)
        sess["turns"].append({"id": tid, "speaker": initials[init], "text": text})
        if label:
            if label in labels:
                die(where + ": duplicate label " + label)
            labels[label] = tid
    out_q = []
    for where, (t, q, a, ev) in questions:
        ids = []
        for lab in [x.strip() for x in ev.split(",") if x.strip()]:
            if lab not in labels:
                die(where + ": unknown label " + lab)
            ids.append(labels[lab])
        out_q.append({"conversation": conv["id"], "question": q, "answer": a,
                      "evidence": ids, "type": TYPES[t],
                      "split": "tune" if conv["id"] in TUNE else "test"})
    return conv, out_q


def main():
    convs, questions = [], []
    for name in sorted(os.listdir(SRC)):
        if name.endswith(".txt"):
            c, qs = parse_file(os.path.join(SRC, name))
            convs.append(c)
            questions.extend(qs)
    final_q = []
    for i, q in enumerate(questions, 1):
        final_q.append(dict([("id", "q%04d" % i)] + list(q.items())))
    doc = {
        "version": 1,
        "description": (
            "memsdk recall benchmark: hand-written synthetic multi-session "
            "conversations (casual dialogs between two people and engineering "
            "ops chats) with paraphrased questions whose answers are specific "
            "turns. Each turn is meant to be stored as one memory "
            "'Speaker: text' with the session date as occurred_at; a question "
            "is answered if an evidence turn is in the top-k results. Questions "
            "with split 'tune' may be used for tuning; 'test' questions come "
            "from other conversations and must never be tuned on."
        ),
        "conversations": convs,
        "questions": final_q,
    }
    with open(OUT, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, ensure_ascii=False, indent=1)
        fh.write("\n")
    nturns = sum(len(s["turns"]) for c in convs for s in c["sessions"])
    print("wrote %s: %d conversations, %d turns, %d questions"
          % (OUT, len(convs), nturns, len(final_q)))


if __name__ == "__main__":
    main()
