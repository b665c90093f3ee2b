"""The demo stories as data: one entry per demo scenario (its plain question, the
message that matters, the runs to show, the proof and the fix, all texts in plain
words), the glossary, and plain renderings of stored text for people who do not write
code. No Streamlit here; app/story_parts.py draws it, app/app_pages/story.py orders it.

To add a story, append a ``Story`` to ``STORIES`` (the fields say what each needs); its
runs must exist in the demo database (sample_data/scenarios/)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Proof:
    """The replay that proves the point: the run replayed, and what changes in what it
    was given — the key message put back, and/or whole parts taken away."""

    run: str  # the run replayed: one that asked the story's question (tests check it)
    put_back_key: bool = False  # put the key message back into that run's prompt
    take_away: tuple[str, ...] = ()  # prompt parts (lanes) taken away, e.g. "working_memory"
    intro: str = ""  # plain: what the replay does and why it proves the point
    button: str = "Ask again"  # plain: the button that runs it


@dataclass(frozen=True)
class Fix:
    """A later run of the same question with a setting changed."""

    run: str
    intro: str  # plain: what was changed (no setting names; the engineer view has them)


@dataclass(frozen=True)
class Story:
    """One demo story. Every text is plain language (tests/app/test_story.py scans
    them); ids and settings appear only in the engineer details."""

    key: str  # the scenario key (sample_data/scenarios/), also ``?story=<key>``
    title: str
    question: str  # the one-line plain question on the start page's card
    intro: str  # who, and what went wrong (or right)
    thread: str  # the thread that holds the key message
    key_phrase: str  # literal text the key message contains (finds it in the thread)
    key_name: str  # plain name of the key message ("the refund decision"), labels charts
    fact: str  # literal text a right answer contains: marks each answer right or wrong
    run: str  # the run the story is about: its question and answer
    said: str  # section 1: where the key message was said
    answered: str  # section 2: what happened when the question came
    why: str  # section 4: why, in plain words (the numbers are added from the record)
    proof: Proof
    fix: Fix | None = None
    chart: bool = False  # show how closely each older message matched the question
    next_step: str = ""  # when there is no fix run: what would fix it
    people: dict[str, str] = field(default_factory=dict)  # thread -> plain conversation name


STORIES: tuple[Story, ...] = (
    Story(
        key="support", title="The assistant forgot the refund",
        question="Why did the assistant forget Anna's refund?",
        intro=("Anna was promised a €240 refund in one conversation with a shop's support "
               "assistant. Weeks later, in a new conversation, she asks about it, and the "
               "assistant has no idea. Here is why, and the proof."),
        thread="support-1", key_phrase="The refund of €240 for order A-1042 was approved",
        key_name="the refund decision", fact="€240", run="support-3-forgot",
        said=("In an earlier conversation Anna reported a cracked blender jug, and the "
              "assistant approved a refund of €240. This is the message that matters:"),
        answered=("In a new conversation Anna asks about that refund. The assistant "
                  "answers:"),
        why=("Before answering, the assistant's memory looks through Anna's older "
             "conversations for messages that match the question, and hands over only the "
             "closest few."),
        chart=True,
        proof=Proof(
            run="support-3-forgot", put_back_key=True,
            intro=("To prove that the missing refund decision is the whole reason, we take "
                   "the very answer that went wrong, put the refund decision back into what "
                   "the assistant was given, change nothing else, and ask again."),
            button="Put the refund decision back and ask again"),
        fix=Fix(run="support-3-fixed",
                intro=("The fix: the same question, asked later with memory set to accept "
                       "slightly weaker matches and to hand over more of them.")),
    ),
    Story(
        key="home", title="The filter that hid the bathroom",
        question="Why couldn't the assistant say which bathroom tiles Eva picked?",
        intro=("Eva plans her renovation over three conversations: the kitchen, the "
               "bathroom, and the budget. In the budget conversation she asks which tiles "
               "she picked for the bathroom, and the assistant does not know."),
        thread="bathroom-plans", key_phrase="For the walls we picked terracotta zellige",
        key_name="the tile choice", fact="zellige", run="home-tiles",
        said="In the bathroom conversation Eva made her choice:",
        answered="Later, in the budget conversation, she asks about it. The assistant answers:",
        why=("This assistant was set up for the kitchen: its memory only looks at messages "
             "labelled kitchen or general. Every bathroom message carries the label "
             "bathroom, so memory skipped the tile choice however well it matched."),
        proof=Proof(
            run="home-tiles", put_back_key=True,
            intro=("To prove the label was the reason, we take that answer, put the tile "
                   "choice back into what the assistant was given, and ask again."),
            button="Put the tile choice back and ask again"),
        fix=Fix(run="home-tiles-nofilter",
                intro="The fix: the same question, asked with the label filter switched off."),
    ),
    Story(
        key="tech", title="The fact lost in a summary",
        question="Why did the assistant lose the staging network's address range?",
        intro=("Cara's conversation about moving a service to a new Python version grows "
               "long. The assistant cannot be handed all of it, so its memory writes a "
               "short summary of the early part. One detail does not make it into the "
               "summary."),
        thread="py311-migration", key_phrase="only accepts connections from the 10.8.0.0/16",
        key_name="the address range", fact="10.8.0.0/16", run="tech-staging-range",
        said="Early in the conversation Cara mentioned a detail in passing:",
        answered=("Much later she asks about it. The assistant, given only the summary of "
                  "the early conversation, answers:"),
        why=("The early part of the conversation reached the assistant only as a summary, "
             "and the summary kept the decisions but left out the address range. What the "
             "summary leaves out, the assistant cannot know."),
        proof=Proof(
            run="tech-staging-range", put_back_key=True,
            intro=("To prove that what the summary left out is the whole reason, we take "
                   "the very answer that went wrong, put the message with the address range "
                   "back into what the assistant was given, word for word, change nothing "
                   "else, and ask the same question again."),
            button="Put the address range back and ask again"),
        next_step=("What would fix it: a summary that keeps numbers and addresses, or "
                   "handing the assistant more of the conversation word for word."),
    ),
    Story(
        key="trip", title="The plan the assistant keeps",
        question="How does the assistant remember Ben's trip budget across conversations?",
        intro=("Ben plans a trip to Lisbon over three conversations. The assistant keeps a "
               "small plan (destination, dates, budget, lodging) and updates it as "
               "decisions are made. Later questions are answered from that plan."),
        thread="trip-2", key_phrase="We want to spend at most 2,000 euros", key_name="the budget",
        fact="2000", run="trip-3-budget",
        said="In the second conversation Ben set the budget:",
        answered=("In the third conversation he asks about it. The assistant answers "
                  "correctly:"),
        why=("The budget message itself was not handed over: it is in an older "
             "conversation. What the assistant had was its plan, where it wrote the budget "
             "down when Ben decided it."),
        proof=Proof(
            run="trip-3-budget", take_away=("working_memory",),
            intro=("To prove the plan carried the answer, we take the plan away from what "
                   "the assistant was given, change nothing else, and ask again."),
            button="Take the plan away and ask again"),
        next_step=("Nothing to fix here: this is memory working as intended. Try the other "
                   "stories to see it fail."),
    ),
    Story(
        key="move", title="The budget that cut the gate code",
        question=("Why couldn't the assistant tell Noor the gate code she had mentioned "
                  "earlier in the same conversation?"),
        intro=("Noor is moving into a new flat and talks it through with an assistant in one "
               "long conversation. Early on, the caretaker's gate code comes up. When she "
               "asks for it later, the assistant says it does not know."),
        thread="new-flat", key_phrase="gate code is 4417", key_name="the gate code",
        fact="4417", run="move-gate-small-budget",
        said="Early in the conversation Noor passed on what the caretaker told her:",
        answered="Later in the same conversation she asks for it. The assistant answers:",
        why=("The assistant can only read a limited amount of the conversation each time it "
             "answers. By the time Noor asked, the conversation had grown past that limit, so "
             "the oldest messages were left out to make room, and the gate code was among "
             "them. With nothing about the gate code in front of it, the assistant said it "
             "did not know."),
        proof=Proof(
            run="move-gate-small-budget", put_back_key=True,
            intro=("To prove the left-out message is the whole reason, we take the very "
                   "answer that went wrong, put the gate code back into what the assistant "
                   "was given, change nothing else, and ask again."),
            button="Put the gate code back and ask again"),
        fix=Fix(run="move-gate-large-budget",
                intro=("The fix: the same question, asked with room for more of the "
                       "conversation. Nothing is left out, and the answer is 4417.")),
    ),
)


def story_by_key(key: str | None) -> Story:
    """The story named ``key`` (the first one when None or unknown)."""
    return next((s for s in STORIES if s.key == key), STORIES[0])


# -- plain words ----------------------------------------------------------------------
#: the parts of a prompt, in plain words (engineers call them lanes)
PLAIN_PARTS: dict[str, str] = {
    "instructions": "Its instructions",
    "working_memory": "The plan it keeps",
    "observations": "A summary of earlier messages",
    "recalled": "Older messages memory looked up",
    "recent": "The latest messages of this conversation",
    "input": "The question",
}

#: why a message memory found was still left out (engineers: dropped, with a reason)
PLAIN_LEFT_OUT: dict[str, str] = {
    "unanswered-tool-call": ("it is a request to another system whose answer was never "
                             "saved, and the assistant cannot be shown a request without "
                             "its answer"),
    "orphan-tool-result": ("it is an answer from another system whose request was not "
                           "handed over with it"),
    "duplicate-tool-call-id": "it repeats an exchange the assistant already had",
    "token-limit": ("it did not fit: the assistant can only read a limited amount, and "
                    "the oldest messages were cut to make room for the newer ones"),
    "tool-call-filter": ("it is an exchange with another system, and this assistant is set "
                         "up to be given none of those"),
}
#: why, when the record names a reason the table above does not know
LEFT_OUT_OTHERWISE = "a step that trims what the assistant is given removed it"


def left_out_because(reason: str | None) -> str:
    """Why a message was left out, from the reason the record gives, in plain words."""
    return PLAIN_LEFT_OUT.get(reason or "", LEFT_OUT_OTHERWISE)


GLOSSARY: tuple[tuple[str, str, str], ...] = (
    ("what the assistant was given", "prompt (composition)",
     "everything put in front of the language model for one answer"),
    ("a part of what it was given", "lane",
     "instructions, plan, summary, looked-up messages, latest messages, question"),
    ("older messages memory looked up", "recalled messages (recall)",
     "messages from older conversations chosen because they match the question"),
    ("how closely a message matches", "score (cosine similarity)",
     "0–100 %: how near the message's meaning is to the question's"),
    ("minimum match", "threshold",
     "a message must match at least this much to be handed over"),
    ("at most the N closest", "top-k",
     "only the N best matches are handed over, even if more pass the minimum"),
    ("position", "rank", "1 = the closest match"),
    ("left out", "dropped", "chosen (found by memory, or among the latest messages), "
     "then removed before answering; the record says why"),
    ("the plan it keeps", "working memory", "structured notes the assistant updates"),
    ("a summary of earlier messages", "observations",
     "older history condensed by the observer"),
    ("length", "tokens", "how much text; models read text in tokens (about ¾ of a word)"),
    ("one answer", "run (run id)", "one turn of the assistant, recorded in full"),
    ("a message's place in its conversation", "seq", "0, 1, 2 … per conversation"),
    ("ask again with a change", "counterfactual replay",
     "re-ask the model on the recorded prompt with parts changed"),
)


_OBS_PREFIX = re.compile(r"^(\s*-\s*)\[[^\]]*\]\s*", re.MULTILINE)
_OBS_HEADING = re.compile(r"^#\s*Observations\s*\n", re.IGNORECASE)


def plain_summary(text: str) -> str:
    """An observations block for people: the bullet points without their position and
    date tags."""
    return _OBS_PREFIX.sub(r"\1", _OBS_HEADING.sub("", text)).strip() or "(empty)"


_WM_BLOCK = re.compile(r"<working_memory>\s*(.*?)\s*</working_memory>", re.DOTALL)


#: what a field name's last word means when it names a unit: the value is shown with it
_UNITS = {"eur": "euros", "usd": "dollars", "gbp": "pounds", "pct": "%", "percent": "%",
          "km": "km", "cm": "cm", "kg": "kg", "min": "minutes", "mins": "minutes",
          "minutes": "minutes", "hours": "hours", "days": "days", "nights": "nights"}
_FIELD = re.compile(r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\s*[:=]\s*(\d+(?:[.,]\d+)*(?!\w))?")


def plain_fields(text: str) -> str:
    """``snake_case_key: value`` pairs (a structured answer, a plan's fields) as words:
    ``budget_eur: 2000`` reads ``budget: 2000 euros``, ``end_date: …`` ``end date: …``."""
    def words(m: re.Match[str]) -> str:
        name, value = m[1].split("_"), m[2]
        if value is not None and name[-1] in _UNITS:
            return f"{' '.join(name[:-1])}: {value} {_UNITS[name[-1]]}"
        return f"{' '.join(name)}: {value or ''}"

    return _FIELD.sub(words, text)


def _engineer_term(engineer: str) -> str:
    return engineer.split(" (")[0]


def plain_answer(text: str) -> str:
    """An answer for people: field syntax as words, and the glossary's engineer terms of
    more than one word ("working memory") in the story's plain words."""
    for plain, engineer, _ in GLOSSARY:
        term = _engineer_term(engineer)
        if " " in term:
            text = re.sub(rf"(?i)\b{re.escape(term)}\b", plain, text)
    return plain_fields(text)


#: where a glossary term appears on a plain page (by the engineer's word): the words
#: the story pages use for it
GLOSSARY_CUES: dict[str, str] = {
    "prompt (composition)": r"what the assistant (?:was|is) given",
    "lane": r"how that was made up",
    "recalled messages (recall)": r"older messages memory looked up|memory looks through",
    "score (cosine similarity)": r"how closely|\bmatch(?:es|ed)? the question",
    "threshold": r"\bminimum\b",
    "top-k": r"only the \d+ closest|the closest few",
    "rank": r"\bposition \d+",
    "dropped": r"found (?:by memory )?but left out|left out (?:of what|because)",
    "working memory": r"\bplan\b",
    "observations": r"\bsummary\b",
    "tokens": r"\blength\b|limited amount",
    "run (run id)": r"\bthe very answer\b",
    "counterfactual replay": r"\bask(?:ed)? (?:the same question )?again\b",
}


def glossary_terms(text: str) -> list[tuple[str, str, str]]:
    """The glossary rows whose term ``text`` uses, in the glossary's order."""
    return [row for row in GLOSSARY if (cue := GLOSSARY_CUES.get(row[1]))
            and re.search(cue, text, re.IGNORECASE)]


def plain_plan(text: str) -> str:
    """A working-memory block for people: one ``field: value`` line per field of the
    plan (its JSON read, never shown raw); the text as is when it holds no JSON plan."""
    m = _WM_BLOCK.search(text)
    try:
        plan = json.loads(m.group(1)) if m else None
    except ValueError:
        plan = None
    if not isinstance(plan, dict):
        return text
    lines = []
    for k, v in plan.items():
        shown = (", ".join(map(str, v)) or "(none)") if isinstance(v, list) else (
            "(none)" if v is None else str(v))
        lines.append(plain_fields(f"{k}: {shown}"))
    return "\n".join(lines) or "(empty)"


def percent(score: float) -> str:
    return f"{round(score * 100)} %"
