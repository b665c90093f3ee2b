"""Generate the long multi-session conversation benchmark (``longconv.json``).

Each conversation is one user talking with an assistant over many sessions. Personal
facts are stated once, buried in chit-chat, some are later updated; questions about
them are phrased differently from the statement and would be asked sessions later.
Every question names its evidence turns (the turn that states the value the question
asks about: the update for "now" questions, the original for "before" questions).

What makes it hard, on purpose:

- statements and questions come from separate template pools (many paraphrases), so
  a question rarely repeats the statement's words;
- topical distractors share the fact's vocabulary without holding the answer (the
  assistant's follow-up questions, talk about other people's dentists and cars);
- an updated fact leaves an outdated statement behind, whose words match as well;
- about a third of the questions were already asked once, mid-conversation, and got
  no answer: that earlier copy of the question matches the query best of all.

Deterministic: ``python -m bench.recall_quality.longconv.generate`` rewrites the same
file (seed 7). No network, no model.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.recall_quality.longconv.facts import (
    CHITCHAT,
    FACTS,
    NAMES,
    OTHERS,
    PROBES,
    FactType,
)

HERE = Path(__file__).parent
OUT = HERE / "longconv.json"
SEED = 7
N_CONVERSATIONS = 16
SESSIONS = 18
FACTS_PER_CONV = 30


@dataclass
class Conversation:
    id: str
    user: str
    turns: list[dict[str, Any]] = field(default_factory=list)
    questions: list[dict[str, Any]] = field(default_factory=list)

    def say(self, role: str, text: str, session: int) -> int:
        self.turns.append({"role": role, "text": text, "session": session})
        return len(self.turns) - 1


def _fill(template: str, slots: dict[str, str]) -> str:
    out = template.format(**slots)
    return out[0].upper() + out[1:]


def _chitchat(conv: Conversation, rng: random.Random, session: int, n: int) -> None:
    for _ in range(n):
        topic = rng.choice(CHITCHAT)
        user_line, reply = rng.choice(topic)
        lead = rng.choice(LEADS)
        conv.say("user", (lead + user_line[0].lower() + user_line[1:] if lead else user_line)
                 + rng.choice(TAILS), session)
        conv.say("assistant", reply, session)


@dataclass
class _Plan:
    fact: FactType
    value: dict[str, str]
    stated_at: int  # session
    updated_at: int | None
    new_value: dict[str, str] | None
    pre_ask_at: int | None  # session where the question is asked without an answer
    question: str  # the template asked at the end (and verbatim when pre-asked, half
    # the time)
    pre_ask_verbatim: bool
    others_at: list[int]  # sessions where someone else's fact of this kind comes up


def _plan(rng: random.Random) -> list[_Plan]:
    plans = []
    for fact in rng.sample(FACTS, FACTS_PER_CONV):
        stated = rng.randrange(0, SESSIONS - 6)
        updated = None
        new_value = None
        value = fact.draw(rng)
        if fact.updates and rng.random() < 0.4:
            updated = rng.randrange(stated + 2, SESSIONS - 2)
            while (new_value := fact.draw(rng)) == value:
                pass
        pre_ask = rng.randrange(stated + 1, SESSIONS - 1) if rng.random() < 0.35 else None
        others = [rng.randrange(0, SESSIONS - 1) for _ in range(rng.randint(1, 2))] \
            if OTHERS.get(fact.name) else []
        plans.append(_Plan(fact, value, stated, updated, new_value, pre_ask,
                           rng.choice(fact.questions), rng.random() < 0.5, others))
    return plans


def _session_events(plans: list[_Plan], session: int) -> list[tuple[str, _Plan]]:
    ev = [("state", p) for p in plans if p.stated_at == session]
    ev += [("update", p) for p in plans if p.updated_at == session]
    ev += [("pre_ask", p) for p in plans if p.pre_ask_at == session]
    ev += [("other", p) for p in plans for s in p.others_at if s == session]
    return ev


def build_conversation(index: int, rng: random.Random) -> Conversation:
    user = NAMES[index % len(NAMES)]
    conv = Conversation(id=f"longconv-{index:02d}", user=user)
    plans = _plan(rng)
    evidence: dict[int, dict[str, int]] = {}
    for session in range(SESSIONS):
        conv.say("user", rng.choice(OPENERS).format(assistant="Sam"), session)
        conv.say("assistant", rng.choice(GREETINGS).format(user=user), session)
        events = _session_events(plans, session)
        rng.shuffle(events)
        for kind, p in events:
            _chitchat(conv, rng, session, rng.randint(1, 3))
            i = id(p)
            if kind == "state":
                evidence.setdefault(i, {})["old"] = conv.say(
                    "user", _embed_in_talk(rng, _fill(rng.choice(p.fact.statements), p.value)),
                    session)
                conv.say("assistant", _fill(rng.choice(p.fact.followups), p.value), session)
            elif kind == "update":
                assert p.new_value is not None
                evidence.setdefault(i, {})["new"] = conv.say(
                    "user", _embed_in_talk(rng, _fill(rng.choice(p.fact.updates), p.new_value | {
                        f"old_{k}": v for k, v in p.value.items()})), session)
                conv.say("assistant", rng.choice(ACKS), session)
            elif kind == "other":
                other = p.fact.draw(rng)
                conv.say("user", _fill(rng.choice(OTHERS[p.fact.name]), other), session)
                conv.say("assistant", rng.choice(OTHER_REPLIES), session)
            else:
                asked = p.question if p.pre_ask_verbatim else rng.choice(p.fact.questions)
                conv.say("user", _fill(asked, p.value), session)
                conv.say("assistant", rng.choice(NO_ANSWER), session)
        _chitchat(conv, rng, session, rng.randint(3, 7))
        conv.say("user", rng.choice(CLOSERS), session)
        conv.say("assistant", rng.choice(GOODBYES), session)
    for p in plans:
        ev = evidence[id(p)]
        if "new" in ev:
            conv.questions.append(_question(conv, rng, p, [ev["new"]], "updated"))
            if p.fact.before_questions and rng.random() < 0.5:
                q = rng.choice(p.fact.before_questions)
                conv.questions.append({"question": _fill(q, p.value), "evidence": [ev["old"]],
                                       "fact": p.fact.name, "kind": "before-update",
                                       "pre_asked": False})
        else:
            conv.questions.append(_question(conv, rng, p, [ev["old"]], "single"))
        probes = PROBES.get(p.fact.name)
        # only for facts never updated: an update need not restate every detail
        if probes and "new" not in ev and rng.random() < 0.6:
            conv.questions.append({
                "question": _fill(rng.choice(probes), p.value), "evidence": [ev["old"]],
                "fact": p.fact.name, "kind": "probe", "pre_asked": False})
    return conv


def _embed_in_talk(rng: random.Random, fact: str) -> str:
    """Most real turns carry more than the fact: two times in three, chit-chat comes
    before or after it in the same turn (which dilutes its embedding)."""
    r = rng.random()
    before = rng.choice(rng.choice(CHITCHAT))[0]
    after = rng.choice(AFTERTHOUGHTS)
    if r < 0.33:
        return f"{before} {fact}"
    if r < 0.66:
        return f"{fact} {after}"
    return fact


def _question(conv: Conversation, rng: random.Random, p: _Plan, evidence: list[int],
              kind: str) -> dict[str, Any]:
    return {"question": _fill(p.question, p.value), "evidence": evidence,
            "fact": p.fact.name, "kind": kind, "pre_asked": p.pre_ask_at is not None}


LEADS = ["", "", "", "Honestly, ", "Ugh, ", "So, ", "Random thought: ", "Oh, and ",
         "Funny thing, ", "Well, "]
TAILS = ["", "", "", " Anyway.", " Haha.", " Just saying.", " Typical.", " Not much else new."]
OPENERS = ["Hi {assistant}!", "Hey, it's me again.", "Good morning!", "Hello again.",
           "Hi there, got a minute?", "Evening! Long day.", "Hey {assistant}, back again.",
           "Morning, how's it going?"]
GREETINGS = ["Hi {user}, good to hear from you.", "Hello {user}! What's on your mind?",
             "Hey {user}, how have you been?", "Good to see you again, {user}.",
             "Hi {user}! How was your week?"]
CLOSERS = ["OK, I have to run. Talk later!", "Thanks, that's all for today.",
           "Right, I'll let you go.", "Gotta go, dinner is ready.", "Bye for now!"]
GOODBYES = ["Take care, talk soon!", "Bye! Have a good evening.", "Anytime. See you.",
            "Enjoy the rest of your day!"]
ACKS = ["Thanks for the update, I'll keep that in mind.", "Noted, that's a change!",
        "Good to know, thanks for telling me.", "Oh, that's news. Noted."]
AFTERTHOUGHTS = ["Anyway, enough about me, how are things with you?",
                 "Other than that the week was pretty uneventful, just work and errands.",
                 "Also the kids have a school play on Friday, chaos as usual.",
                 "I still need to call the bank about the card, remind me later.",
                 "And the washing machine is making that noise again.",
                 "Weather's been all over the place, by the way.",
                 "Oh, and I've started going to bed earlier, feels good."]
OTHER_REPLIES = ["Ha, small world.", "Interesting!", "Oh really? Good for them.",
                 "That's nice to hear.", "Funny how that goes."]
NO_ANSWER = ["Hmm, I don't think you've told me that yet.",
             "I'm not sure, could you remind me?",
             "I don't have that in front of me right now.",
             "You may have mentioned it, but I can't find it."]


def generate(seed: int = SEED, n: int = N_CONVERSATIONS) -> dict[str, Any]:
    rng = random.Random(seed)
    convs = [build_conversation(i, rng) for i in range(n)]
    return {
        "name": "longconv",
        "description": "Synthetic long multi-session conversations with labelled evidence "
                       "turns; see bench/recall_quality/longconv/generate.py",
        "seed": seed,
        "conversations": [{"id": c.id, "user": c.user, "turns": c.turns,
                           "questions": c.questions} for c in convs],
    }


def main() -> None:
    data = generate()
    OUT.write_text(json.dumps(data, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
    n_t = sum(len(c["turns"]) for c in data["conversations"])
    n_q = sum(len(c["questions"]) for c in data["conversations"])
    print(f"wrote {OUT}: {len(data['conversations'])} conversations, {n_t} turns, "
          f"{n_q} questions")


if __name__ == "__main__":
    main()
