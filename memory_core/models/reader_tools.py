"""How the offline reader model decides to call a tool: what kind of request a user
message is, which offered tool matches it, the arguments it fills from the message, and
the working-memory patch it writes."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from memory_core.models.base import ToolSpec
from memory_core.models.reader_text import (
    DATE_RE,
    ID_RE,
    MONEY_RE,
    NUMBER_RE,
    STOP_WORDS,
    content_terms,
    question_terms,
    split_sentences,
    term_of,
    words,
)

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


