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
  I was given mentions <key terms>." (terms no text of the prompt holds, questions and
  instructions included), or "… nothing I was given answers that." when all are there.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any

from memory_core.embedding.hashing import Embedder
from memory_core.models.base import ModelIdentity, ModelResponse, ToolSpec, Usage
from memory_core.models.reader_text import (
    CONCEPT_TERMS,
    Evidence,
    Scored,
    Source,
    _tool_result_facts,
    extract_evidence,
    flatten_json,
    score_units,
    term_of,
    words,
    working_memory_of,
)
from memory_core.models.reader_tools import (
    _POLITE,
    _name_words,
    fill_arguments,
    is_lookup_tool,
    is_working_memory_tool,
    request_kind,
    tool_match_score,
    working_memory_patch,
)
from memory_core.tokens import estimate_tokens
from memory_core.types import Message, ToolCallPart, ToolResultPart, canonical_json

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
            return self._dont_know(question, extract_evidence(messages, q_index),
                                   [m for i, m in enumerate(messages) if i != q_index])
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
    def _dont_know(question: str, units: Sequence[Evidence],
                   given: Sequence[Message]) -> str:
        """Names the question's words that nothing in the prompt mentions: neither an
        evidence unit nor any other text it was given (an earlier question, the
        instructions, a tool call's name and arguments), which answer nothing but do
        mention them."""
        present = {t for u in units for t in u.terms}
        present.update(t for m in given for text in _texts_of(m) for tok in words(text)
                       if (t := term_of(tok)) is not None)
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


def _texts_of(m: Message) -> list[str]:
    """Every text of a message a reader would call "given": its text, each tool call's
    name and argument values, each tool result."""
    out = [m.text() or ""]
    for part in m.content if isinstance(m.content, list) else []:
        if isinstance(part, ToolCallPart):
            out += [part.name, *flatten_json(part.args)]
        elif isinstance(part, ToolResultPart):
            out += [part.name or "", *flatten_json(part.result)]
    return out
