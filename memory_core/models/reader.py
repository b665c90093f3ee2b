"""The offline reader model: answers the last user question only from what the prompt
contains (working memory, observations, recalled and recent messages, tool results).

It is deterministic and needs no network, so it is the demo default and the model that
makes counterfactual replay meaningful: remove the message that carried a fact and the
answer really changes to "I don't know". It can also call a tool whose name/description
matches the request, including ``update_working_memory``. Heuristics, in order:

* **Question** = the text of the last user message. It is never evidence.
* **Evidence** = every other message, split into units: sentences of user/assistant
  messages (questions and "I don't know" statements skipped; a reply to a question
  also carries the question's terms in its first sentence), "field: value" facts of
  the ``# Working Memory`` JSON block, lines of the ``# Observations`` block, and
  "key: value" facts of tool results. Other system text (instructions) is ignored.
* **Terms** = lower-cased word tokens minus stop words, lightly stemmed, with a few
  synonyms folded into concepts (``#cost``, ``#date``, ``#decide``). Units holding an
  amount of money carry ``#cost``, units holding a date carry ``#date``.
* **Support** of a unit = the idf-weighted share of the question's terms it contains
  (terms rare in the prompt weigh more; terms found nowhere still count in the total,
  so a question about something absent gets low support), plus ``0.3 * cosine`` when
  an embedder is given (scaled by 0.7 for the lexical part), plus 0.1 when the unit
  has the answer type the question asks for (money for "how much", a date for "when"),
  times 0.6 when it lacks it. A unit must share at least one *specific* (non-concept) term with the
  question, so embeddings and concepts only re-rank, they never answer alone.
* The best unit answers if its support >= ``min_support``; a second unit is added when
  it covers question terms the first lacks and is nearly as well supported. Ties go to
  the later unit (a correction beats the original). Otherwise: "I don't know — nothing
  I was given mentions <key terms>."
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from memory_core.embedding.hashing import Embedder
from memory_core.models.base import ModelIdentity, ModelResponse, ToolSpec, Usage
from memory_core.text import STOP_WORDS as BASE_STOP_WORDS
from memory_core.tokens import estimate_tokens
from memory_core.types import Message, ToolCallPart, ToolResultPart, canonical_json
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


# ---------------------------------------------------------------------------------------
# Requests and tools
# ---------------------------------------------------------------------------------------

Kind = Literal["info", "request", "statement"]
_POLITE = re.compile(r"^(?:(?:hey|hi|ok|okay|so|and|also|now)[,!]?\s+)*"
                     r"(?:(?:please|kindly)\s+|(?:can|could|would|will)\s+you\s+(?:please\s+)?"
                     r"|i(?:'d| would) like you to\s+|i want you to\s+|go ahead and\s+)",
                     re.IGNORECASE)
_INFO_LEADS = frozenset("""what what's whats when where who whom whose which why how is are
was were did do does has have had tell remind show give list recap summarize summarise
any""".split())
LOOKUP_VERBS = frozenset("""get lookup look search find fetch check list query read show
recall retrieve""".split())


def request_kind(text: str) -> Kind:
    """``info`` asks for an answer, ``request`` asks for an action, else ``statement``."""
    stripped = text.strip()
    m = _POLITE.match(stripped)
    rest = stripped[m.end():] if m else stripped
    toks = words(rest)
    first = toks[0] if toks else ""
    if first in _INFO_LEADS:
        return "info"
    if m:
        return "request"
    if stripped.endswith("?"):
        return "info"
    return "request" if first and first not in STOP_WORDS and not re.match(
        r"^(?:my|our|the|i|we|it|this|that)\b", stripped, re.IGNORECASE) else "statement"


def _name_words(name: str) -> list[str]:
    return words(name.replace("_", " ").replace("-", " ").replace(".", " "))


def is_working_memory_tool(spec: ToolSpec) -> bool:
    return {"update", "working", "memory"} <= set(_name_words(spec.name))


def is_lookup_tool(spec: ToolSpec) -> bool:
    ws = _name_words(spec.name)
    return bool(ws) and ws[0] in LOOKUP_VERBS


def tool_match_score(question: str, spec: ToolSpec) -> float:
    """2 per question term in the tool's name, 1 per other term in its description."""
    q = set(question_terms(question))
    name_terms = {t for t in (term_of(w) for w in _name_words(spec.name)) if t}
    desc_terms = set(content_terms(spec.description)) - name_terms
    return 2.0 * len(q & name_terms) + 1.0 * len(q & desc_terms)


# -- argument filling -------------------------------------------------------------------

_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|'([^']{2,})'")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_CAPITALISED = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-zà-ÿ]+(?:\s+[A-Z][a-zà-ÿ]+)*)")


def _number(text: str, integer: bool) -> int | float | None:
    m = NUMBER_RE.search(text)
    if not m:
        return None
    raw = m.group(0)
    # "2,000" is a thousands separator; "2,5" a decimal comma.
    if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?", raw):
        raw = raw.replace(",", "")
    raw = raw.replace(",", ".")
    try:
        value = float(raw)
    except ValueError:
        return None
    if integer or value.is_integer():
        return int(value)
    return value


def _first(pattern: re.Pattern[str], text: str) -> str | None:
    m = pattern.search(text)
    if not m:
        return None
    return next((g for g in m.groups() if g), None) if m.groups() else m.group(0)


def fill_argument(question: str, pname: str, schema: dict[str, Any]) -> Any:
    """A value for one parameter from the question, or None when nothing fits."""
    ptype = schema.get("type", "string")
    if isinstance(ptype, list):
        ptype = next((t for t in ptype if t != "null"), "string")
    pwords = set(_name_words(pname))
    enum = schema.get("enum")
    if isinstance(enum, list):
        low = question.lower()
        for option in enum:
            if str(option).lower() in low:
                return option
        return None
    if ptype in ("number", "integer"):
        money = MONEY_RE.search(question)
        source = money.group(0) if money and pwords & {"amount", "price", "cost", "total",
                                                     "sum", "value"} else question
        # Ids like r-7 must not feed numbers.
        cleaned = ID_RE.sub(" ", source) if source is question else source
        return _number(cleaned, ptype == "integer")
    if ptype == "boolean":
        low = question.lower()
        if re.search(r"\b(?:yes|true|enable|on)\b", low):
            return True
        if re.search(r"\b(?:no|false|disable|off)\b", low):
            return False
        return None
    if ptype != "string":
        return None
    fmt = schema.get("format")
    if pwords & {"date", "day", "when", "deadline"} or fmt in ("date", "date-time"):
        return _first(DATE_RE, question)
    if pwords & {"email", "mail"} or fmt == "email":
        return _first(_EMAIL, question)
    if pwords & {"amount", "price", "cost", "total"}:
        return _first(MONEY_RE, question)
    if pwords & {"id", "ref", "reference", "code", "number", "no"} or "id" in pname.lower():
        # Prefer the id right after a word of the parameter name ("order r-7").
        for w in sorted(pwords - {"id", "ref", "reference", "code", "number", "no"}):
            m = re.search(rf"\b{re.escape(w)}s?\s+(?:#|no\.?\s*|number\s+)?([A-Za-z0-9][\w-]*\d[\w-]*"
                          rf"|\d[\w-]*)", question, re.IGNORECASE)
            if m:
                return m.group(1)
        return _first(ID_RE, question)
    quoted = _first(_QUOTED, question)
    if quoted:
        return quoted
    if pwords & {"city", "name", "destination", "location", "place", "person", "customer",
                 "country", "user", "to", "recipient", "who"}:
        cap = [c for c in _CAPITALISED.findall(question) if c.lower() not in STOP_WORDS]
        return cap[0] if cap else None
    if pwords & {"query", "text", "message", "question", "reason", "note", "content",
                 "description", "topic", "body", "prompt"}:
        m = _POLITE.match(question.strip())
        return question.strip()[m.end():] if m else question.strip()
    return None


def fill_arguments(question: str, spec: ToolSpec) -> dict[str, Any] | None:
    """Arguments from the JSON-schema parameters; None when a required one cannot be
    filled (then the tool is not called)."""
    params = spec.parameters or {}
    props = params.get("properties") or {}
    required = set(params.get("required") or [])
    args: dict[str, Any] = {}
    for pname, pschema in props.items():
        value = fill_argument(question, pname, pschema if isinstance(pschema, dict) else {})
        if value is None:
            if pname in required:
                return None
            continue
        args[pname] = value
    return args


# -- working-memory patches -------------------------------------------------------------

_CLAUSE_SPLIT = re.compile(r"\s*(?:[;!?]|\.(?:\s|$)|,\s+|\s+and\s+)\s*")
_PATTERNS = (
    re.compile(r"^(?:please\s+)?(?:set|change|update|make)\s+(?:the\s+|my\s+|our\s+)?"
               r"(?P<field>[\w\s-]+?)\s+(?:to|=|as)\s+(?P<value>.+)$", re.IGNORECASE),
    re.compile(r"^(?:the\s+|my\s+|our\s+)?(?P<field>[\w\s-]+?)\s+(?:is|are|will be|should be|"
               r"=|:|to)\s+(?P<value>.+)$", re.IGNORECASE),
)
_REMEMBER = re.compile(r"\b(?:remember|note|keep in mind)\s+(?:that\s+)?(?P<fact>.+)$",
                       re.IGNORECASE)


def _field_for(phrase: str, fields: Sequence[str]) -> str | None:
    p = {t for t in (term_of(w) for w in words(phrase)) if t}
    best, best_n = None, 0
    for f in fields:
        f_terms = {t for t in (term_of(w) for w in _name_words(f)) if t}
        n = len(p & f_terms)
        if f_terms and n == len(f_terms) and n > best_n:
            best, best_n = f, n
    return best


def _convert(value: str, schema: dict[str, Any], current: Any) -> Any:
    value = value.strip().rstrip(".!").strip()
    value = re.sub(r"^(?:the|a|an)\s+", "", value, flags=re.IGNORECASE) if not value[:1].isupper() \
        else value
    ptype = schema.get("type", "string")
    if isinstance(ptype, list):
        ptype = next((t for t in ptype if t != "null"), "string")
    if ptype in ("number", "integer"):
        return _number(value, ptype == "integer")
    if ptype == "boolean":
        return value.lower() in ("yes", "true", "on", "y")
    if ptype == "array":
        items = list(current) if isinstance(current, list) else []
        return items if value in items else items + [value]
    if ptype == "object":
        return None
    return value


def working_memory_patch(question: str, spec: ToolSpec,
                         current: dict[str, Any]) -> dict[str, Any] | None:
    """A patch for the working-memory tool from facts the user states, or None.

    Schema mode (the tool's properties are the fields): "set the destination to Lisbon",
    "my budget is 2000 euros" fill the matching fields, converted to their types;
    arrays get the value appended. Record mode (a single ``memory`` object property):
    "my X is Y" becomes ``{"memory": {"x": "Y"}}``. "remember that ..." fills a field
    named in the fact, else a notes/facts array when the schema has one."""
    props: dict[str, Any] = (spec.parameters or {}).get("properties") or {}
    record_mode = list(props) == ["memory"] and (props["memory"] or {}).get("type") != "string"
    fields = [] if record_mode else list(props)
    patch: dict[str, Any] = {}
    remembered: list[str] = []
    clauses: list[tuple[str, bool]] = []  # (clause, stated inside "remember that ...")
    for sentence in split_sentences(question):
        r = _REMEMBER.search(sentence)
        if r:
            remembered.append(r.group("fact").strip().rstrip(".!"))
        text = r.group("fact") if r else sentence
        clauses.extend((c.strip(), r is not None) for c in _CLAUSE_SPLIT.split(text) if c.strip())
    matched_any = False
    for clause, from_remember in clauses:
        for n, pat in enumerate(_PATTERNS):
            m = pat.match(clause)
            if not m:
                continue
            phrase, raw = m.group("field"), m.group("value")
            if record_mode:
                # Without a schema any "X is Y" would do; only explicit forms count.
                explicit = n == 0 or from_remember or re.match(r"^(?:my|our)\b", clause,
                                                               re.IGNORECASE)
                key = "_".join(w for w in words(phrase) if w not in STOP_WORDS)
                value = _convert(raw, {}, None)
                if explicit and key and value:
                    patch.setdefault("memory", {})[key] = value
                    matched_any = True
                break
            f = _field_for(phrase, fields)
            if f is None:
                continue
            schema = props[f] if isinstance(props[f], dict) else {}
            value = _convert(raw, schema, current.get(f))
            if value is not None:
                patch[f] = value
                matched_any = True
            break
    if remembered and not matched_any:
        notes = next((f for f in fields if set(_name_words(f)) & {"notes", "facts", "note"}), None)
        if notes is not None:
            schema = props[notes] if isinstance(props[notes], dict) else {}
            for fact in remembered:
                value = _convert(fact, schema, patch.get(notes, current.get(notes)))
                if value is not None:
                    patch[notes] = value
        elif record_mode:
            patch["memory"] = {"notes": list(current.get("notes") or []) + remembered}
    return patch or None


# ---------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------

_PREFIX: dict[Source, str] = {"conversation": "From our conversation", "working memory":
                              "From working memory", "notes": "From my notes", "tool": "From"}


def _sentence(text: str) -> str:
    return text if text[-1:] in ".!?" else text + "."


class ReaderModel:
    """Deterministic offline reader; see the module docstring for the heuristics."""

    def __init__(self, embed: Embedder | None = None, *, min_support: float = 0.3,
                 tool_bar: float = 2.0, max_units: int = 2,
                 name: str = "offline-reader") -> None:
        if not 0.0 <= min_support <= 1.0:
            from memory_core.errors import InvalidInputError
            raise InvalidInputError(f"min_support must be in [0, 1], got {min_support!r}")
        self.embed = embed
        self.min_support = min_support
        self.tool_bar = tool_bar
        self.max_units = max(1, max_units)
        self.name = name
        self.temperature = 0.0
        self.seed: int | None = None

    def identity(self) -> ModelIdentity:
        return ModelIdentity(kind="reader", name=self.name, temperature=0.0)

    # -- the Model protocol ---------------------------------------------------------
    def complete(self, messages: Sequence[Message],
                 tools: Sequence[ToolSpec]) -> ModelResponse:
        q_index = self._question_index(messages)
        if q_index is None:
            return self._respond(messages, "I don't know — there is no question to answer.")
        question = messages[q_index].text() or ""
        after = messages[q_index + 1:]
        calls = [c for m in after for c in m.tool_calls()]
        results = [r for m in after for r in m.tool_results()]
        if calls or results:
            return self._respond(messages, self._after_tools(messages, q_index, question,
                                                            calls, results))
        call = self.choose_tool(messages, q_index, tools)
        if call is not None:
            return ModelResponse(tool_calls=[call], model=self.name, finish_reason="tool_calls",
                                 usage=Usage(input_tokens=self._input_tokens(messages),
                                             output_tokens=estimate_tokens(
                                                 canonical_json(call.args))))
        kind = request_kind(question)
        if kind == "info":
            return self._respond(messages, self.answer(messages, q_index))
        if kind == "request" and _POLITE.match(question.strip()):
            return self._respond(messages, "I can't do that — no tool I was given matches "
                                           "this request.")
        return self._respond(messages, "Noted.")

    # -- parts, public for tests and the workbench's "why" view ---------------------
    def answer(self, messages: Sequence[Message], q_index: int) -> str:
        """The evidence answer to the question at ``q_index``."""
        question = messages[q_index].text() or ""
        scored = self.rank(messages, q_index)
        best = [s for s in scored if s.support >= self.min_support]
        if not best:
            return self._dont_know(question, extract_evidence(messages, q_index))
        chosen = [best[0]]
        covered = set(best[0].matched)
        for s in best[1:]:
            if len(chosen) >= self.max_units:
                break
            if s.support >= 0.8 * best[0].support and not set(s.matched) <= covered \
                    and s.unit.text != chosen[0].unit.text:
                chosen.append(s)
                covered |= set(s.matched)
        parts: list[str] = []
        for i, s in enumerate(chosen):
            u = s.unit
            label = f"From the {u.tool} tool" if u.source == "tool" else _PREFIX[u.source]
            if i > 0:
                label = "Also, " + label[0].lower() + label[1:]
            parts.append(f"{label}: {_sentence(u.text)}")
        return " ".join(parts)

    def rank(self, messages: Sequence[Message], q_index: int) -> list[Scored]:
        question = messages[q_index].text() or ""
        return score_units(question, extract_evidence(messages, q_index), self.embed)

    def choose_tool(self, messages: Sequence[Message], q_index: int,
                    tools: Sequence[ToolSpec]) -> ToolCallPart | None:
        """The tool call for the question, or None (see docs/models.md)."""
        question = messages[q_index].text() or ""
        kind = request_kind(question)
        if kind != "info":
            for spec in tools:
                if is_working_memory_tool(spec):
                    patch = working_memory_patch(question, spec, working_memory_of(messages))
                    if patch:
                        return self._call(messages, spec, patch)
        candidates: list[tuple[float, int, ToolSpec]] = []
        for i, spec in enumerate(tools):
            if is_working_memory_tool(spec):
                continue
            if kind == "info" and not is_lookup_tool(spec):
                continue  # a question about a refund must not issue one
            if kind == "statement" and not is_lookup_tool(spec):
                # A plain statement ("the refund was fine") is not an order.
                continue
            score = tool_match_score(question, spec)
            if score >= self.tool_bar:
                candidates.append((score, i, spec))
        if not candidates:
            return None
        if kind == "info":
            # Answer from the prompt when it can; look things up only otherwise.
            if any(s.support >= self.min_support for s in self.rank(messages, q_index)):
                return None
        candidates.sort(key=lambda c: (-c[0], c[1]))
        for _, _, spec in candidates:
            args = fill_arguments(question, spec)
            if args is not None:
                return self._call(messages, spec, args)
        return None

    # -- internals ------------------------------------------------------------------
    @staticmethod
    def _question_index(messages: Sequence[Message]) -> int | None:
        for i in range(len(messages) - 1, -1, -1):
            if messages[i].role == "user" and messages[i].text():
                return i
        return None

    @staticmethod
    def _call(messages: Sequence[Message], spec: ToolSpec, args: dict[str, Any]) -> ToolCallPart:
        digest = hashlib.sha1()
        for m in messages:
            digest.update(m.canonical_json().encode("utf-8"))
        digest.update(spec.name.encode("utf-8"))
        digest.update(canonical_json(args).encode("utf-8"))
        return ToolCallPart(id=f"call-{digest.hexdigest()[:12]}", name=spec.name, args=args)

    def _after_tools(self, messages: Sequence[Message], q_index: int, question: str,
                     calls: Sequence[ToolCallPart], results: Sequence[ToolResultPart]) -> str:
        by_id = {c.id: c for c in calls}
        lines: list[str] = []
        for r in results:
            call = by_id.get(r.call_id)
            result = r.result
            if isinstance(result, str):
                try:
                    result = json.loads(result)
                except ValueError:
                    pass
            error = result.get("error") if isinstance(result, dict) else None
            if error:
                lines.append(f"The {r.name} tool failed: {error}.")
            elif "working" in r.name.lower() or {"update", "working", "memory"} <= set(
                    _name_words(r.name)):
                args = call.args if call is not None else {}
                if isinstance(args, dict) and set(args) == {"memory"} and isinstance(
                        args["memory"], dict):
                    args = args["memory"]
                facts = "; ".join(flatten_json(args)) or "no change"
                lines.append(f"Noted — working memory updated: {facts}.")
            else:
                facts = "; ".join(_tool_result_facts(result)) or "nothing"
                lines.append(f"The {r.name} tool returned: {_sentence(facts)}")
        if not results:
            lines.append("I called a tool but got no result.")
        if request_kind(question) == "info":
            evidence = self.answer(messages, q_index)
            if not evidence.startswith("I don't know") or not results:
                lines.append(evidence)
        return " ".join(lines)

    @staticmethod
    def _dont_know(question: str, units: Sequence[Evidence]) -> str:
        """Names the question's words that nothing in the prompt mentions."""
        present = {t for u in units for t in u.terms}
        missing: dict[str, None] = {}
        for tok in words(question):
            t = term_of(tok)
            if t is not None and t not in present and t not in CONCEPT_TERMS:
                missing[tok] = None
        keys = list(missing)[:4]
        if not keys:
            return "I don't know — nothing I was given answers that."
        listed = keys[0] if len(keys) == 1 else ", ".join(keys[:-1]) + " or " + keys[-1]
        return f"I don't know — nothing I was given mentions {listed}."

    def _respond(self, messages: Sequence[Message], text: str) -> ModelResponse:
        return ModelResponse(text=text, model=self.name, finish_reason="stop",
                             usage=Usage(input_tokens=self._input_tokens(messages),
                                         output_tokens=estimate_tokens(text)))

    @staticmethod
    def _input_tokens(messages: Iterable[Message]) -> int:
        return sum(estimate_tokens(m.text() or m.canonical_json()) for m in messages)
