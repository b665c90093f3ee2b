"""How the offline reader model reads a prompt: words and terms (stop words, a light
stemmer, concepts), the evidence units of each message, and how well a unit supports
the question. The extractive summariser reads with it too."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from memory_core.embedding.hashing import Embedder
from memory_core.text import STOP_WORDS as BASE_STOP_WORDS
from memory_core.types import Message
from memory_core.vectors import cosine_to

# ---------------------------------------------------------------------------------------
# Text analysis (shared with the extractive summariser)
# ---------------------------------------------------------------------------------------

# The shared function words, plus what a conversation says around its content
# (greetings, "remember", "tell me") and contractions as the reader's tokens keep them.
STOP_WORDS: frozenset[str] = BASE_STOP_WORDS | frozenset("""
above against already anything aren't because below between both can't cannot couldn't
didn't doesn't doing don't during either else ever gets hadn't hasn't haven't he'd
he'll he's hello here's hers herself hey hi himself how's i'd i'll i'm i've isn't it's
itself know let's myself now one ought ours ourselves please really recall remember
remind said say says shan't she'd she'll she's shouldn't something still sure tell
thank thanks that's theirs themselves there's they'd they'll they're they've thing
things think through under until upon wasn't we'd we'll we're we've well weren't
what's whats when's where's while who's why's won't wouldn't yet you'd you'll you're
you've yourself yourselves
""".split())

# Stems folded into one concept so paraphrases meet ("agreed" ~ "decided").
_CONCEPTS: dict[str, str] = {
    **dict.fromkeys(["decid", "decision", "agr", "agreement", "approv", "settl", "confirm",
                     "chos", "choos", "chosen"], "#decide"),
    **dict.fromkeys(["cost", "pric", "amount", "pay", "paid", "payment", "charg", "fee",
                     "spend", "spent", "total"], "#cost"),
    **dict.fromkeys(["dat", "day", "deadlin", "due"], "#date"),
}
CONCEPT_TERMS: frozenset[str] = frozenset(_CONCEPTS.values())

_TOKEN = re.compile(r"[^\W_]+(?:[-'.,/][^\W_]+)*")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("sses", "ss"), ("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""),
    ("ly", ""), ("s", ""))

_MONTHS = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|"
           r"aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
DATE_RE = re.compile(
    r"\b(?:\d{4}-\d{2}-\d{2}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTHS}\b(?:,?\s+\d{{4}})?"
    rf"|{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}})?"
    r"|(?:mon|tues|wednes|thurs|fri|satur|sun)day|today|tomorrow|yesterday"
    r"|next\s+(?:week|month|year))\b", re.IGNORECASE)
MONEY_RE = re.compile(
    r"(?:[€$£]\s?\d[\d,.]*\b|\b\d[\d,.]*\s?(?:€|\$|£|eur\b|euros?\b|usd\b|dollars?\b"
    r"|gbp\b|pounds?\b))", re.IGNORECASE)
NUMBER_RE = re.compile(r"-?\d+(?:[.,]\d+)*")
ID_RE = re.compile(r"\b(?=[A-Za-z0-9-]*\d)(?=[A-Za-z0-9-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+\b"
                   r"|\b[A-Za-z]{1,4}\d{2,}\b|#\d+\b")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9€$£])")


def stem(word: str) -> str:
    """A light, deterministic suffix stripper: plural/verb endings and a final 'e',
    so that 'prices'/'price' and 'decided'/'decide' meet. Tokens with digits stay."""
    if any(c.isdigit() for c in word):
        return word.replace(",", "")
    w = word
    for suffix, repl in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            if suffix == "s" and w.endswith("ss"):
                break
            w = w[: -len(suffix)] + repl
            break
    while len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]
    return w


def words(text: str) -> list[str]:
    """Lower-cased word tokens; camelCase and snake_case names are split into words."""
    return [t.lower() for t in _TOKEN.findall(_CAMEL.sub(" ", text))]


def term_of(token: str) -> str | None:
    """The term a token contributes, or None for a stop word."""
    if token in STOP_WORDS or (len(token) < 2 and not token.isdigit()):
        return None
    s = stem(token)
    return _CONCEPTS.get(s, s)


def content_terms(text: str) -> list[str]:
    """Distinct terms of ``text`` in first-seen order, plus ``#cost`` / ``#date`` when
    it holds an amount of money or a date."""
    out: dict[str, None] = {}
    for tok in words(text):
        t = term_of(tok)
        if t is not None:
            out[t] = None
    if MONEY_RE.search(text):
        out["#cost"] = None
    if DATE_RE.search(text):
        out["#date"] = None
    return list(out)


def split_sentences(text: str) -> list[str]:
    """Lines, then sentences; bullets and ``[seq N]`` markers are stripped."""
    out: list[str] = []
    for line in text.splitlines():
        line = strip_marker(line)
        if not line:
            continue
        out.extend(s.strip() for s in _SENTENCE_SPLIT.split(line) if s.strip())
    return out


_MARKER = re.compile(r"^\s*(?:\[obs-[^\]]*\]\s*)?(?:[-*•]\s+)?(?:\[seq [^\]]*\]\s*)?")


def strip_marker(line: str) -> str:
    return _MARKER.sub("", line, count=1).strip()


def flatten_json(value: Any, prefix: str = "") -> list[str]:
    """JSON as "a.b: value" lines; lists of scalars joined by ", "; empties skipped."""
    if isinstance(value, dict):
        out: list[str] = []
        for k, v in value.items():
            out.extend(flatten_json(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(value, list):
        if all(not isinstance(v, dict | list) for v in value):
            items = [_scalar(v) for v in value if v is not None and v != ""]
            return [f"{prefix}: {', '.join(items)}" if prefix else ", ".join(items)] if items else []
        out = []
        for v in value:
            out.extend(flatten_json(v, prefix))
        return out
    if value is None or value == "":
        return []
    return [f"{prefix}: {_scalar(value)}" if prefix else _scalar(value)]


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


# ---------------------------------------------------------------------------------------
# Evidence
# ---------------------------------------------------------------------------------------

Source = Literal["conversation", "working memory", "notes", "tool"]

_WM_BLOCK = re.compile(r"# Working Memory\s*\n<working_memory>\n(.*?)\n?</working_memory>",
                       re.DOTALL)
_OBS_HEADER = "# Observations"
_DONT_KNOW = re.compile(r"\b(?:i don't know|i do not know|i don’t know|nothing i was given|"
                        r"i'm not sure|i am not sure|i can't do that)\b", re.IGNORECASE)
_OWN_PREFIX = re.compile(r"^(?:From (?:our conversation|working memory|my notes|the [\w.-]+ "
                         r"tool)|Also, from [\w. -]+):\s*")


@dataclass(frozen=True)
class Evidence:
    """One unit of evidence: verbatim text, where it came from, its prompt position."""

    text: str
    source: Source
    position: int
    tool: str | None = None
    terms: tuple[str, ...] = field(default=(), compare=False)


def working_memory_of(messages: Sequence[Message]) -> dict[str, Any]:
    """The current working memory parsed from the last ``# Working Memory`` block."""
    current: dict[str, Any] = {}
    for m in messages:
        if m.role != "system":
            continue
        for body in _WM_BLOCK.findall(m.text() or ""):
            try:
                value = json.loads(body)
            except ValueError:
                continue
            if isinstance(value, dict):
                current = value
    return current


def extract_evidence(messages: Sequence[Message], question_index: int) -> list[Evidence]:
    """Every evidence unit of the prompt except the question message itself."""
    units: list[Evidence] = []

    context: list[str] = []

    def add(text: str, source: Source, msg_i: int, tool: str | None = None) -> None:
        text = _OWN_PREFIX.sub("", text.strip()).strip()
        if not text or text.endswith("?") or _DONT_KNOW.search(text):
            return
        own = content_terms(text)
        if own:
            terms = tuple(dict.fromkeys(own + context))
            context.clear()  # only the first sentence of a reply is the answer
            units.append(Evidence(text, source, msg_i * 10_000 + len(units), tool, terms))

    for i, m in enumerate(messages):
        context.clear()
        if i == question_index:
            continue
        if m.role == "system":
            body = m.text() or ""
            for wm in _WM_BLOCK.findall(body):
                try:
                    value = json.loads(wm)
                except ValueError:  # a template: its lines are the facts
                    for line in wm.splitlines():
                        add(line, "working memory", i)
                    continue
                for fact in flatten_json(value):
                    add(fact, "working memory", i)
            if _OBS_HEADER in body:
                section = body.split(_OBS_HEADER, 1)[1]
                section = re.split(r"\n#\s", section, maxsplit=1)[0]
                for line in section.splitlines():
                    if line.strip().startswith("kept:"):
                        continue
                    for s in split_sentences(line):
                        add(s, "notes", i)
            continue  # instructions are not evidence
        text = m.text()
        # A reply to a question inherits its terms ("Budget?" -> "About 3000 euros.").
        context[:] = _question_context(messages[i - 1], m) if i > 0 else []
        if m.role == "tool" and text:
            for fact in _tool_result_facts(text):
                add(fact, "tool", i, str(m.metadata.get("name") or "tool"))
        elif text:
            for s in split_sentences(text):
                add(s, "conversation", i)
        for r in m.tool_results():
            for fact in _tool_result_facts(r.result):
                add(fact, "tool", i, r.name)
    return units


def _question_context(prev: Message, m: Message) -> list[str]:
    if prev.role == m.role or prev.role not in ("user", "assistant") or \
            m.role not in ("user", "assistant"):
        return []
    asked = [s for s in split_sentences(prev.text() or "") if s.endswith("?")]
    return [t for s in asked for t in content_terms(s)]


def _tool_result_facts(result: Any) -> list[str]:
    if isinstance(result, str):
        try:
            result = json.loads(result)
        except ValueError:
            return split_sentences(result)
    if isinstance(result, str):
        return split_sentences(result)
    return flatten_json(result)


# ---------------------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Scored:
    unit: Evidence
    support: float
    lexical: float
    semantic: float | None
    matched: tuple[str, ...]


def _wanted_types(question: str) -> set[str]:
    q = question.lower()
    wanted: set[str] = set()
    if re.search(r"\bhow much\b|\bcost|\bprice|\bamount|\bpaid\b|\bpay\b", q):
        wanted.add("#cost")
    if re.search(r"\bwhen\b|\bwhat (?:date|day|time)\b|\bwhich (?:date|day)\b|\bdeadline", q):
        wanted.add("#date")
    return wanted


def question_terms(question: str) -> list[str]:
    terms = [t for t in content_terms(question) if t not in ("#cost", "#date")]
    # "how much"/"when" ask for a type: add it as a concept term.
    for t in sorted(_wanted_types(question)):
        if t not in terms:
            terms.append(t)
    # Concepts named literally in the question ("the price") are terms too.
    for tok in words(question):
        c = term_of(tok)
        if c is not None and c in CONCEPT_TERMS and c not in terms:
            terms.append(c)
    return terms


def score_units(question: str, units: Sequence[Evidence],
                embed: Embedder | None = None) -> list[Scored]:
    """Support of every unit for the question, best first (ties: later unit first)."""
    q_terms = question_terms(question)
    if not q_terms or not units:
        return []
    n = len(units)
    df = {t: sum(1 for u in units if t in u.terms) for t in q_terms}
    weight = {t: math.log(1.0 + n / (1.0 + df[t])) for t in q_terms}
    total = sum(weight.values())
    specific = [t for t in q_terms if t not in CONCEPT_TERMS]
    wanted = _wanted_types(question)
    cos: list[float] | None = None
    if embed is not None:
        vecs = np.asarray(embed([question] + [u.text for u in units]), dtype=np.float64)
        cos = [float(x) for x in cosine_to(vecs[1:], vecs[0])]
    out: list[Scored] = []
    for i, u in enumerate(units):
        matched = tuple(t for t in q_terms if t in u.terms)
        if specific and not any(t in u.terms for t in specific):
            continue  # no anchor: concepts/embeddings never answer alone
        if not matched:
            continue
        lexical = sum(weight[t] for t in matched) / total
        sem = cos[i] if cos is not None else None
        support = lexical if sem is None else 0.7 * lexical + 0.3 * max(sem, 0.0)
        if wanted:
            # "how much"/"when" want an amount/a date: a unit without one is a weak answer.
            support = support + 0.1 if any(t in u.terms for t in wanted) else support * 0.6
        out.append(Scored(u, round(min(support, 1.0), 6), round(lexical, 6),
                          None if sem is None else round(sem, 6), matched))
    out.sort(key=lambda s: (-s.support, -s.unit.position))
    return out


