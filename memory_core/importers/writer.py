"""Turning planned threads and runs into store writes: messages (embedded in batches),
run records and journal entries reconstructed honestly, with compensation on failure.

Everything is computed before the first write; a write that fails midway erases
what this import wrote, so nothing from the file remains."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from json.encoder import encode_basestring as _STRING  # (C; what canonical JSON uses)
from typing import Any, overload

import numpy as np
from pydantic import BaseModel

from memory_core.composition.memory import thread_title, token_text
from memory_core.embedding.hashing import Embedder, embedder_name
from memory_core.errors import InvalidInputError
from memory_core.importers.common import Exchange, ImportReport, Progress, Stages, undated
from memory_core.importers.sourcegraph import model_name
from memory_core.importers.stored import chain_metadata
from memory_core.importers.thread_plan import RunPlan, ThreadPlan
from memory_core.journal import (
    ImportRecord,
    JournalWriter,
    RunKeys,
    StepRecord,
    ToolSpecRecord,
)
from memory_core.journal.seal import seal_text_of
from memory_core.models.base import ModelIdentity, ModelResponse, Usage
from memory_core.provenance.prompt import FrozenPrompt
from memory_core.provenance.record import (
    PROVENANCE_RECENT_CAP,
    CompositionSettings,
    Memctx,
    MessageRef,
)
from memory_core.storage.base import NewThread, Storage
from memory_core.storage.common import EncodedJson, encoded_json, text_message_json
from memory_core.text import preview
from memory_core.tokens import estimate_tokens
from memory_core.types import (
    AppendRow,
    JsonTemplate,
    Message,
    RunRecord,
    ToolCallPart,
    json_slot,
)

EMBED_BATCH = 64
# writes grouped per transaction (Storage.write_batch): a killed import loses at most
# one batch, which importing the file again completes. On DuckDB a commit takes longer
# as the file grows (~65 ms each at 100,000 requests): batches of 500 runs and 200
# threads made its writes ~13% slower, once measured (records: ~16 MB a batch now)
WRITE_BATCH_THREADS = 1000
WRITE_BATCH_RUNS = 2000
# What a recorded request cannot tell: the recording system's memory decisions.
UNKNOWN_FIELDS = ["recalled", "near_misses", "dropped", "settings", "settings.recall_enabled",
                  "settings.recall", "query", "recall_skipped",
                  "working_memory", "observations", "scope_snapshot"]


def _num(params: dict[str, Any], *names: str) -> Any:
    for name in names:
        v = params.get(name)
        if isinstance(v, int | float) and not isinstance(v, bool):
            return v
    return None


def model_identity(ex: Exchange) -> ModelIdentity:
    """The recorded model and its sampling parameters (``None`` where the request left
    them to the server)."""
    return ModelIdentity(**_identity(ex))


def _identity(ex: Exchange) -> dict[str, Any]:
    """``model_identity(ex)``'s fields."""
    p = ex.params
    seed, max_tokens = _num(p, "seed"), _num(p, "max_tokens", "max_completion_tokens",
                                             "max_output_tokens")
    temperature, top_p = _num(p, "temperature"), _num(p, "top_p")
    return {"kind": "imported", "name": ex.model or "imported",
            "temperature": None if temperature is None else float(temperature),
            "top_p": None if top_p is None else float(top_p),
            "seed": None if seed is None else int(seed),
            "max_tokens": None if max_tokens is None else int(max_tokens)}


def unknown_fields(ex: Exchange) -> list[str]:
    """What this recording lacks: the memory decisions always, and the offered tools,
    request parameters, usage or model when the record does not say, and ``history``
    when the request continued a conversation held server-side that the file does not
    hold."""
    extra = [name for name, missing in (
        ("tools", ex.tools is None), ("params", not ex.params_known),
        ("usage", not ex.usage_known and ex.response),
        ("model", ex.model is None),
        ("history", ex.held is not None and ex.held.unrecorded is not None)) if missing]
    return UNKNOWN_FIELDS + extra


def another_model(asked: str | None, answered: str | None) -> bool:
    """Whether the model that answered is another than the one asked for: an alias
    resolved (``gpt-4`` → ``gpt-4-0613``), a router's choice. Not when the name asked
    for only wraps the one that answered — a Bedrock model id or inference profile
    (``us.anthropic.claude-sonnet-4-5-20250929-v1:0``), a Gemini resource name
    (``models/gemini-2.0-flash``), a provider-prefixed id (promptfoo's
    ``openai:chat:gpt-4o``), a Sourcegraph modelref
    (``anthropic::2024-10-22::claude-3-5-sonnet-latest``)."""
    return asked is not None and answered is not None and answered not in _named(asked)


def _named(asked: str) -> set[str]:
    """The model names an id asked for stands for: itself, a resource name's last part
    (``…models/<name>``), a Bedrock id's model (``[region.]provider.<name>[-vN[:M]]``),
    a provider-prefixed id's (``<provider>:[<api>:]<name>``), a Sourcegraph modelref's
    (``<provider>::<api-version>::<name>``)."""
    names = {asked, model_name(asked)}
    if (prefixed := _PREFIXED.fullmatch(asked)) is not None:
        names |= {prefixed[1], prefixed[1].partition(":")[2]}
    if (resource := _RESOURCE.fullmatch(asked)) is not None:
        names.add(resource[1])
    if (bedrock := _BEDROCK.fullmatch(asked)) is not None:
        names |= {bedrock[1], _VERSION.sub("", bedrock[1])}
    return names


_RESOURCE = re.compile(r"(?:.*/)?models/(.+)")
_BEDROCK = re.compile(r"(?:[a-z]{2,5}\.)?[a-z0-9]+\.([^./]+)")
_VERSION = re.compile(r"-v\d+(?::\d+)?$")
_PREFIXED = re.compile(r"[a-z][a-z0-9_-]*:(.+)")


def import_extra(ex: Exchange, rest: dict[str, Any]) -> dict[str, Any]:
    """The run's import record's ``extra``: ``rest`` of the import's info, the API
    when it is not the OpenAI family's (``"anthropic"``), where the call was sent
    (``endpoint``, when its URL was recorded), the model the request named when
    another answered (``requested_model``: ``another_model``) or the id it named the
    one that answered by (``requested_id``: a Bedrock inference profile), what the
    usage says within its counts (``usage_detail``: reasoning, cached input), the stop
    sequence that ended the answer (``stop_sequence``), the request's
    ``request_fields`` as sent, the names of the tools a call that failed offered
    (``tools_offered``: an answered call's step record holds its tools) and, for a
    history held server-side, where its prompt's reconstructed messages are."""
    out = dict(rest)
    if ex.api is not None:
        out["api"] = ex.api
    if ex.endpoint is not None:
        out["endpoint"] = ex.endpoint
    if another_model(ex.requested_model, ex.model):
        out["requested_model"] = ex.requested_model
    elif ex.requested_model not in (None, ex.model):  # the same model by another id
        out["requested_id"] = ex.requested_model
    if ex.usage_detail:
        out["usage_detail"] = dict(ex.usage_detail)
    if ex.stop_sequence is not None:
        out["stop_sequence"] = ex.stop_sequence
    if ex.request_fields:
        out["request_fields"] = dict(ex.request_fields)
    if ex.instructions_applied_by is not None:
        out["instructions_applied_by"] = ex.instructions_applied_by
    if ex.response is None and ex.tools is not None:  # (no step record holds them)
        out["tools_offered"] = [t.name for t in _tool_specs(ex.tools)]
    if ex.held is not None:
        h = ex.held
        out["server_held_history"] = {
            "reference": h.reference, "reconstructed_from": h.source,
            "prompt_messages": [h.start, h.start + h.count], "unrecorded": h.unrecorded}
    return out


def _tokens(msgs: Sequence[Message]) -> int:
    # counted as AgentMemory counts a composed prompt, so imported and live runs compare
    return sum(estimate_tokens(token_text(m)) for m in msgs)


def _plain(m: Message) -> Message:
    """A message as a run records it (a stored one without its store's fields); one
    that is plain already is only read from here on, so not copied."""
    if type(m) is Message:
        return m
    return Message(role=m.role, content=m.content, metadata=m.metadata)


def _message_json(m: Message) -> str:
    """``_plain(m).canonical_json()``: what a run's seal digests of a message it stored."""
    if type(m.content) is str and not m.metadata:
        return text_message_json(m.content, m.role)
    return _text("a stored message", _plain(m)).text


def _text(what: str, record: BaseModel) -> EncodedJson:
    """A record as the journal stores it, encoded once (its seal hashes this text)."""
    return encoded_json(what, record.model_dump(mode="json"))


# the frozen prompt's JSON around its items' (which are joined from texts made once)
_PROMPT = JsonTemplate({**FrozenPrompt().model_dump(mode="json"), "items": [json_slot("items")]})


def _item_json(lane: str, message_json: str, thread_id: str | None = None,
               seq: int | None = None) -> str:
    """``PromptItem(lane=lane, message=…, thread_id=…, seq=…)`` as the journal stores
    it, around the message's JSON (``_message_json``): its keys sorted, the rest of
    its fields null (an import's items name no observation and no origin)."""
    where = "null" if thread_id is None else _STRING(thread_id)
    return (f'{{"lane":{_STRING(lane)},"message":{message_json},"observation_id":null,'
            f'"origin":null,"seq":{"null" if seq is None else int(seq)},"thread_id":{where}}}')


def _item(cache: dict[tuple[str, int], tuple[Any, str]], lane: str, at: int,
          m: Message, **where: Any) -> str:
    """The canonical JSON of ``PromptItem(lane, _plain(m), **where)``: the same stored
    message (or instruction) is sent again by every later request of its thread, so
    it is made once a thread (``cache``, by lane and place) while the message sent
    there dumps to the same JSON."""
    got = cache.get((lane, at))
    if got is not None and _same(got[0], m):
        if got[0] is not m:  # the parser shares a message the later requests repeat:
            cache[(lane, at)] = (m, got[1])  # compared by identity from here on
        return got[1]
    text = _item_json(lane, _message_json(m), **where)
    if got is None:
        cache[(lane, at)] = (m, text)
    return text


# a ref's and an imported run's memctx's JSON but for the fields an import sets: the
# models' shape checked (and their defaults dumped) once, not once a run
_REF = MessageRef(thread_id="", seq=0, role="", preview="").model_dump(mode="json")
_MEMCTX = Memctx(thread_id="", settings=CompositionSettings(recent_n=0, recall_enabled=False),
                 source="imported").model_dump(mode="json")


def _ref(cache: dict[tuple[str, int], tuple[Any, str]], tid: str, seq: int, role: str,
         preview: str) -> tuple[dict[str, Any], str]:
    """The provenance's ref to stored message ``seq`` (``MessageRef``'s fields) and its
    JSON, made once a thread (every later request of the thread names it the same
    way)."""
    got = cache.get(("ref", seq))
    if got is None or got[0]["role"] != role or got[0]["preview"] != preview:
        ref = {**_REF, "thread_id": tid, "seq": int(seq), "role": role, "preview": preview}
        got = (ref, encoded_json("a message ref", ref).text)
        cache.setdefault(("ref", seq), got)
    return got


_JOIN_AT = "\ue000memwb-join\ue000"


def _joined(what: str, dumped: dict[str, Any], field: str, texts: list[str],
            whole: Callable[[], BaseModel]) -> EncodedJson:
    """A record's JSON value ``dumped`` encoded with the JSON of its list ``field``'s
    items joined in from ``texts``; ``whole()`` (the record with its items) is encoded
    instead on the odd chance that a value of the record is the placeholder."""
    dumped[field] = [_JOIN_AT]
    text = encoded_json(what, dumped).text
    at = f'"{_JOIN_AT}"'
    if text.count(at) != 1:
        return _text(what, whole())
    head, _, tail = text.partition(at)
    return EncodedJson(head + ",".join(texts) + tail)


def _with_fields(value: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    """``value`` with ``fields`` set (``"tokens.recent"``: the ``recent`` of ``tokens``)."""
    out = dict(value)
    for name, v in fields.items():
        within, _, key = name.rpartition(".")
        if within:
            out[within] = {**out[within], key: v}
        else:
            out[key] = v
    return out


# the fields of an imported run's memctx that run_records sets
_MEMCTX_FIELDS = ("thread_id", "resource_id", "recent_count", "incoming_count",
                  "unknown_fields", "tokens.instructions", "tokens.recent", "tokens.input",
                  "settings.recent_n", "settings.embedder")
_MEMCTX_JSON = JsonTemplate(_with_fields(
    _MEMCTX, {"recent": [json_slot("recent")], **{n: json_slot(n) for n in _MEMCTX_FIELDS}}))
_MEMCTX_SLOTS = frozenset(_MEMCTX_JSON.names)


def _memctx_text(what: str, fields: dict[str, Any], refs: list[tuple[dict[str, Any], str]]
                 ) -> EncodedJson:
    """The run's ``Memctx(thread_id=…, …, source="imported")`` as the journal stores it:
    ``_MEMCTX`` with ``fields`` set and the refs' texts in ``recent``. Written into
    ``_MEMCTX_JSON`` when the fields are its own and texts, ints, None or lists of
    texts; encoded (``_joined``) otherwise."""
    texts = {"recent": ",".join(text for _, text in refs)}
    for name, v in fields.items():
        t = type(v)
        if t is str:
            texts[name] = _STRING(v)
        elif v is None:
            texts[name] = "null"
        elif t is int:
            texts[name] = str(v)
        elif t is list and all(type(x) is str for x in v):
            texts[name] = f'[{",".join(map(_STRING, v))}]'
        else:
            break
    else:
        if texts.keys() == _MEMCTX_SLOTS:
            return EncodedJson(_MEMCTX_JSON.fill(texts))
    memctx = _with_fields(_MEMCTX, fields)
    return _joined(what, memctx, "recent", [text for _, text in refs],
                   lambda: Memctx.model_validate({**memctx, "recent": [r for r, _ in refs]}))


def _same(a: Message, b: Message) -> bool:
    """``a`` and ``b`` dump to the same JSON."""
    return a is b or (a.role == b.role and _strict(a.content, b.content)
                      and _strict(a.metadata, b.metadata))


def _strict(x: Any, y: Any) -> bool:
    """Equal as JSON, exactly: ``==`` holds for 1, 1.0 and True, which dump apart."""
    t = type(x)
    if t is not type(y):
        return False
    if t is str or t is int or t is bool or x is None:
        return bool(x == y)
    if t is float:
        return repr(x) == repr(y)
    if t is dict:
        return len(x) == len(y) and all(k in y and _strict(v, y[k]) for k, v in x.items())
    if t is list or t is tuple:
        return len(x) == len(y) and all(_strict(a, b) for a, b in zip(x, y, strict=True))
    if isinstance(x, BaseModel):  # a part: its fields are its dict
        return _strict(x.__dict__, y.__dict__)
    return False  # anything else is made again


def run_records(run_id: str, plan: RunPlan, *, embedder: str | None,
                import_info: dict[str, Any]) -> tuple[RunRecord, list[tuple[str, Any]]]:
    """The run and its journal entries, in the order the runner would write them, each
    entry's value encoded once (``EncodedJson``)."""
    ex: Exchange = plan.exchange
    tid = plan.thread.thread_id
    resource = plan.thread.resource_id
    input_msgs = ex.history[plan.input_from:]
    tp = plan.thread
    cache = tp.prompt_items
    items = [_item(cache, "instructions", j, m) for j, m in enumerate(ex.instructions)]
    recent_tokens = 0
    previews, counts = tp.previews, tp.token_counts
    for m, seq in zip(ex.history[:plan.input_from], plan.history_seqs, strict=False):
        got = cache.get(("recent", seq))  # (``_item``'s answer when it is the message
        items.append(got[1] if got is not None and got[0] is m  # sent there before)
                     else _item(cache, "recent", seq, m, thread_id=tid, seq=seq))
        if seq not in previews:  # the same stored message: the same preview and count
            previews[seq] = preview(m)
            counts[seq] = _tokens([m])
        recent_tokens += counts[seq]
    first_ref = max(0, plan.input_from - PROVENANCE_RECENT_CAP)  # what provenance keeps
    refs = []
    for m, seq in zip(ex.history[first_ref:plan.input_from],
                      plan.history_seqs[first_ref:plan.input_from], strict=True):
        got = cache.get(("ref", seq))  # (``_ref``'s answer when role and preview agree)
        refs.append(got if got is not None and got[0]["role"] == m.role
                    and got[0]["preview"] == previews[seq]
                    else _ref(cache, tid, seq, m.role, previews[seq]))
    input_json = [_message_json(m) for m in input_msgs]
    items += [_item_json("input", text) for text in input_json]
    # Memctx(thread_id=tid, …, recall_enabled=False, source="imported"): _MEMCTX's
    # fields but these, and the refs' texts
    memctx = {"thread_id": tid, "resource_id": resource, "recent_count": plan.input_from,
              "incoming_count": len(input_msgs), "unknown_fields": unknown_fields(ex),
              "tokens.instructions": _tokens(ex.instructions), "tokens.recent": recent_tokens,
              "tokens.input": _tokens(input_msgs), "settings.recent_n": plan.input_from,
              "settings.embedder": embedder}
    keys = RunKeys(run_id)
    started = ex.started_at or undated(ex.index)
    run = RunRecord(run_id=run_id, agent=ex.model or "imported", thread_id=tid,
                    resource_id=resource, status="failed" if ex.error else "completed",
                    started_at=started, finished_at=ex.finished_at or started, error=ex.error)
    known = {k: v for k, v in import_info.items() if k in ("format", "file", "sha1")}
    input_text = ",".join(input_json)
    records: list[tuple[str, BaseModel | EncodedJson]] = [
        (keys.import_, _import_record(keys.import_, ex, known, {
            k: v for k, v in import_info.items() if k not in known})),
        (keys.input, EncodedJson(f'{{"incoming":[{input_text}],"messages":[{input_text}],'
                                 '"sealed":true,"v":1}')),  # InputRecord(…, sealed=True)
        (keys.prompt, EncodedJson(_PROMPT.fill({"items": ",".join(items)}))),
        (keys.memctx, _memctx_text(f"journal value for key '{keys.memctx}'", memctx, refs)),
        (keys.persist_input, _persist(plan.history_seqs[plan.input_from:])),
    ]
    seqs = list(plan.history_seqs[plan.input_from:])
    if ex.response is not None:
        out_seqs = [plan.response_seq] if plan.response_seq is not None else []
        seqs += out_seqs
        # the step answers with the message the run stored (with the ids and the name
        # later requests gave it), parts as recorded: a replay rebuilds the stored
        # message from this step, so it must hold what ``text`` and calls cannot
        answer = _plain(tp.messages[plan.response_seq] if plan.response_seq is not None
                        else ex.response)
        step, text, calls = _step_record(keys.step(0), answer, ex)
        records += [
            (keys.step(0), step),
            (keys.persist_output, _persist(out_seqs)),
            (keys.output, encoded_json(f"journal value for key '{keys.output}'", {  # OutputRecord
                "text": text or "", "steps": 1, "tool_calls": calls,
                "stop_reason": "tool_call" if calls else "final", "v": 1})),
        ]
    entries: list[tuple[str, Any]] = [
        (k, r if isinstance(r, EncodedJson) else _text(f"journal value for key '{k}'", r))
        for k, r in records]
    # (an input message the thread stores as the very object the run sent: its JSON
    # is the input's)
    sent = dict(zip(plan.history_seqs[plan.input_from:],
                    zip(input_msgs, input_json, strict=True), strict=False))
    stored = [(seq, sent[seq][1] if seq in sent and sent[seq][0] is tp.messages[seq]
               else _message_json(tp.messages[seq]))
              for seq in seqs if 0 <= seq < len(tp.messages)]
    # sealed last: a run whose seal is written is whole (and resuming checks for it)
    entries.append((keys.seal, seal_text_of(run, entries, stored)))
    return run, entries


def _import_record(key: str, ex: Exchange, known: dict[str, Any], rest: dict[str, Any]
                   ) -> BaseModel | EncodedJson:
    """``ImportRecord(**known, where=…, notes=…, request_params=…, extra=…)`` as the
    journal stores it, made from its model's dumped shape (``_IMPORT``) where its
    fields are what the model would keep as they are (texts, JSON values under text
    keys); the model itself otherwise."""
    notes, params, extra = list(ex.notes), dict(ex.params or {}), import_extra(ex, rest)
    if _texts(notes) and _texts(params) and _texts(known.values()) and _text_or_none(ex.where):
        try:
            return encoded_json(f"journal value for key '{key}'", {
                **_IMPORT, **known, "where": ex.where, "notes": notes,
                "request_params": params, "extra": extra})
        except InvalidInputError:  # not JSON as it is: the model says what it makes
            pass
    return ImportRecord(**known, where=ex.where, notes=notes, request_params=params,
                        extra=extra)


def _step_record(key: str, answer: Message, ex: Exchange
                 ) -> tuple[BaseModel | EncodedJson, str | None, int]:
    """The run's step record — ``StepRecord(response=ModelResponse.answering(answer,
    usage=…, model=…, finish_reason=…), model=model_identity(ex), tools=…,
    usage_known=…)`` — with the response's text and number of tool calls. Made from
    the models' dumped shape (``_STEP``) for an answer that is a text or only tool
    calls, which ``answering`` keeps no message of; through the models otherwise."""
    content, usage = answer.content, ex.usage
    text: str | None
    calls: list[Any] | None
    if type(content) is str:
        text, calls = content or None, []
    elif content and all(type(p) is ToolCallPart for p in content):
        text, calls = None, list(content)  # (no text part: ``Message.text`` is None)
    else:
        calls = None
    if calls is not None and answer.role == "assistant" and not answer.metadata \
            and type(usage) is Usage and type(usage.input_tokens) is int \
            and type(usage.output_tokens) is int and type(ex.usage_known) is bool \
            and _text_or_none(ex.model) and _text_or_none(ex.finish_reason):
        try:
            step = encoded_json(f"journal value for key '{key}'", {
                **_STEP, "usage_known": ex.usage_known,
                "tools": [t.model_dump(mode="json") for t in _tool_specs(ex.tools)],
                "model": {**_STEP["model"], **_identity(ex)},
                "response": {**_STEP["response"], "text": text, "model": ex.model,
                             "finish_reason": ex.finish_reason,
                             "tool_calls": [p.model_dump(mode="json") for p in calls],
                             "usage": {"input_tokens": usage.input_tokens,
                                       "output_tokens": usage.output_tokens}}})
            return step, text, len(calls)
        except InvalidInputError:  # not JSON as it is: the models say what they make
            pass
    resp = ModelResponse.answering(answer, usage=ex.usage, model=ex.model,
                                   finish_reason=ex.finish_reason)
    return (StepRecord(response=resp, model=model_identity(ex), tools=_tool_specs(ex.tools),
                       usage_known=ex.usage_known), resp.text, len(resp.tool_calls))


# the import and step records' JSON but for the fields an import sets (see _REF)
_IMPORT = ImportRecord().model_dump(mode="json")
_STEP = StepRecord(response=ModelResponse(),
                   model=ModelIdentity(name="")).model_dump(mode="json")


def _texts(values: Any) -> bool:
    return all(type(v) is str for v in values)


def _text_or_none(value: Any) -> bool:
    return value is None or type(value) is str


def _persist(seqs: Sequence[int]) -> EncodedJson:
    """``PersistRecord(seqs=seqs)`` as the journal stores it (planned seqs: ints)."""
    return EncodedJson(f'{{"seqs":[{",".join(str(int(s)) for s in seqs)}],"v":1}}')


def _tool_specs(tools: Sequence[Any] | None) -> list[ToolSpecRecord]:
    out = []
    for t in tools or []:
        if isinstance(t, dict) and isinstance(t.get("name"), str):
            params = t.get("parameters")
            out.append(ToolSpecRecord(name=t["name"], description=str(t.get("description") or ""),
                                      parameters=params if isinstance(params, dict) else {}))
    return out


class RunsToWrite(Sequence[tuple[RunRecord, list[tuple[str, Any]]]]):
    """Every run's row and journal records (``run_records``), each made when its write
    batch asks for it: made all at once before the first write, a large file's runs held
    ~45 times the file in memory (each run's frozen prompt repeats its history), and a
    log of 434,780 requests outgrew 21 GB before it wrote a row. Made in run order, as
    before (the threads' previews are filled as the runs go)."""

    def __init__(self, run_ids: Sequence[str], plans: Sequence[RunPlan], *,
                 embedder: str | None, import_info: dict[str, Any]) -> None:
        if len(run_ids) != len(plans):
            raise ValueError("one run id a planned run")
        self.run_ids, self.plans = run_ids, plans
        self.embedder, self.import_info = embedder, import_info
        # each thread's last run: the JSON its runs share (``ThreadPlan.prompt_items``)
        # is let go once that run is made (kept to the end, it is every stored message's
        # JSON twice over)
        self._last = {id(p.thread): i for i, p in enumerate(plans)}

    def __len__(self) -> int:
        return len(self.plans)

    @overload
    def __getitem__(self, i: int) -> tuple[RunRecord, list[tuple[str, Any]]]: ...

    @overload
    def __getitem__(self, i: slice) -> list[tuple[RunRecord, list[tuple[str, Any]]]]: ...

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        made = run_records(self.run_ids[i], self.plans[i], embedder=self.embedder,
                           import_info=self.import_info)
        if self._last[id(self.plans[i].thread)] == i:
            self.plans[i].thread.prompt_items.clear()  # (made again if asked again)
        return made


def last_record_key(run_id: str, plan: RunPlan) -> str:
    """The journal key ``run_records`` writes last for this run (its seal)."""
    return RunKeys(run_id).seal


def embed_threads(threads: Sequence[ThreadPlan], embed: Embedder | None,
                  progress: Progress | None) -> dict[tuple[str, int], np.ndarray]:
    """Vectors of every message with text, computed in batches before any write."""
    if embed is None:
        return {}
    todo = [(t.thread_id, seq, m.text()) for t in threads for seq, m in enumerate(t.messages)
            if seq >= t.stored_count]  # an earlier import stored (and embedded) the rest
    items = [(tid, seq, text) for tid, seq, text in todo if text is not None]
    out: dict[tuple[str, int], np.ndarray] = {}
    total = len(items)
    if progress is not None:
        progress(0, total)
    for lo in range(0, total, EMBED_BATCH):
        chunk = items[lo:lo + EMBED_BATCH]
        mat = np.asarray(embed([text for _, _, text in chunk]), dtype=np.float32)
        if mat.ndim != 2 or mat.shape[0] != len(chunk):
            raise InvalidInputError(f"embedder {embedder_name(embed)!r} returned shape "
                                    f"{mat.shape} for {len(chunk)} texts")
        for (tid, seq, _), vec in zip(chunk, mat, strict=True):
            out[(tid, seq)] = vec
        if progress is not None:
            progress(min(lo + EMBED_BATCH, total), total)
    return out


def write_all(storage: Storage, threads: Sequence[ThreadPlan],
              runs: Sequence[tuple[RunRecord, list[tuple[str, Any]]]],
              vectors: dict[tuple[str, int], np.ndarray], run_ids: Sequence[str],
              import_meta: dict[str, Any], report: ImportReport,
              existing: AbstractSet[str] = frozenset(), *,
              stages: Stages | None = None) -> None:
    """Write the planned threads and runs in batches; ``existing`` names the file's
    threads an earlier, killed import of it already created. ``stages("stored", …)``
    and ``stages("recorded", …)`` after each batch of threads and of runs."""
    created_threads: list[str] = []
    started_runs: list[str] = []
    try:
        for lo in range(0, len(threads), WRITE_BATCH_THREADS):
            batch = threads[lo:lo + WRITE_BATCH_THREADS]
            new = [t for t in batch if not t.stored and t.thread_id not in existing]
            with storage.write_batch():  # one commit per batch where the engine can
                # the new threads with their messages in a few statements (one at a
                # time, ~8 statements a thread were most of the write on DuckDB)
                try:
                    storage.memory.add_threads([_new_thread(t, vectors, run_ids,
                                                            import_meta, report)
                                                for t in new])
                except BaseException:  # what it made before failing, where not grouped
                    created_threads += _made(storage, [t.thread_id for t in new],
                                             import_meta.get("sha1"))
                    raise
                created_threads += [t.thread_id for t in new]
                for t in batch:
                    if t.stored or t.thread_id in existing:
                        _write_thread(storage, t, vectors, run_ids, import_meta, report,
                                      existing)
            if stages is not None:
                stages("stored", min(lo + WRITE_BATCH_THREADS, len(threads)), len(threads))
        for lo in range(0, len(runs), WRITE_BATCH_RUNS):
            chunk = runs[lo:lo + WRITE_BATCH_RUNS]
            with storage.write_batch():
                # ids are ours: safe to erase if this fails
                started_runs += storage.runs.start_runs([run for run, _ in chunk])
                storage.runs.put_many_if_absent([e for _, entries in chunk for e in entries])
            if stages is not None:
                stages("recorded", min(lo + WRITE_BATCH_RUNS, len(runs)), len(runs))
    except BaseException:
        _compensate(storage, created_threads, started_runs)
        raise
    report.threads_created = [t.thread_id for t in threads if not t.stored]
    report.threads_extended = [t.thread_id for t in threads if t.stored]
    report.runs_created = list(run_ids)  # (the runs' own ids: not made again)


def _rows(t: ThreadPlan, vectors: dict[tuple[str, int], np.ndarray], run_ids: Sequence[str],
          report: ImportReport) -> list[AppendRow]:
    """The thread's rows not stored yet, at their planned seqs (counted in ``report``)."""
    rows = [_row(_plain(m), seq, t.created_at[seq],
                 None if t.first_run[seq] is None else run_ids[t.first_run[seq]],  # type: ignore[index]
                 vectors.get((t.thread_id, seq)))
            for seq, m in enumerate(t.messages) if seq >= t.stored_count]
    report.messages_stored += len(rows)
    report.embeddings_stored += sum(1 for r in rows if r.embedding is not None)
    return rows


def _row(m: Message, seq: int, at: Any, run_id: str | None,
         vector: np.ndarray | None) -> AppendRow:
    """A planned row; without a vector constructed, not validated (its fields are of
    their types by construction: a message, a planned seq, the planned time, a run id;
    the checks were ~5% of writing a thread), a vector's checks made as ever."""
    if vector is None and type(seq) is int and seq >= 0:
        return AppendRow.model_construct(message=m, seq=seq, created_at=at, run_id=run_id,
                                         embedding=None)
    return AppendRow(message=m, seq=seq, created_at=at, run_id=run_id, embedding=vector)


def _import_meta(t: ThreadPlan, import_meta: dict[str, Any]) -> dict[str, Any]:
    return {"import": {**(t.stored_meta or {**import_meta, "key": t.key}),
                       "chain": chain_metadata(t)}}


def _new_thread(t: ThreadPlan, vectors: dict[tuple[str, int], np.ndarray],
                run_ids: Sequence[str], import_meta: dict[str, Any],
                report: ImportReport) -> NewThread:
    """A thread no earlier import stored, with its rows."""
    return NewThread(t.thread_id, _rows(t, vectors, run_ids, report), t.resource_id,
                     thread_title(t.messages), _import_meta(t, import_meta), t.branch_of)


def _write_thread(storage: Storage, t: ThreadPlan, vectors: dict[tuple[str, int], np.ndarray],
                  run_ids: Sequence[str], import_meta: dict[str, Any],
                  report: ImportReport, existing: AbstractSet[str]) -> None:
    """Append the rows of a thread an earlier import (this file's killed attempt, or
    the import that stored the start of the conversation) created, at their planned
    seqs (rows already stored are skipped)."""
    rows = _rows(t, vectors, run_ids, report)
    if rows:
        storage.memory.append_messages(t.thread_id, rows)
    if rows or t.thread_id in existing:
        # the digests later imports find the conversation by, after what was appended
        storage.memory.update_thread(t.thread_id, metadata=_import_meta(t, import_meta))


def _made(storage: Storage, thread_ids: Sequence[str], sha1: str | None) -> list[str]:
    """Those of ``thread_ids`` stored with this import's metadata (best effort)."""
    made = []
    for tid in thread_ids:
        try:
            t = storage.memory.get_thread(tid)
        except Exception:  # noqa: BLE001 - the store that just failed may fail again
            continue
        meta = t.metadata.get("import") if t is not None else None
        if isinstance(meta, dict) and meta.get("sha1") == sha1:
            made.append(tid)
    return made


def _compensate(storage: Storage, threads: Sequence[str], runs: Sequence[str]) -> None:
    """Best effort: every step is attempted even if an earlier one fails, since the
    store that just failed may fail again."""
    for rid in runs:
        try:
            JournalWriter(storage.runs, rid).erase()  # every record of the run
        except Exception:  # noqa: BLE001 - keep erasing the rest
            pass
        try:
            storage.runs.delete_runs([rid])
        except Exception:  # noqa: BLE001
            pass
    for tid in threads:  # the import made them: nothing else was ever given them, so
        try:              # they go without an erasure's redaction of other runs
            storage.memory.delete_thread(tid)
        except Exception:  # noqa: BLE001
            pass
