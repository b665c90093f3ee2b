"""An imported run's records are made once a thread where its requests repeat them (a
stored message's prompt item and provenance ref), yet each run still records exactly
what its own request sent, and every run verifies."""

from __future__ import annotations

import json
from typing import Any

from memory_core.importers import import_text
from memory_core.journal import load_run
from memory_core.journal.seal import verify_run
from memory_core.storage.inmemory import InMemoryStorage

SYSTEM = {"role": "system", "content": "You are terse."}


def _request(messages: list[dict[str, Any]], answer: str) -> str:
    return json.dumps({"request": {"model": "m", "messages": [SYSTEM, *messages]},
                       "response": {"choices": [{"message": {"role": "assistant",
                                                             "content": answer}}]}})


def test_each_run_records_the_history_its_request_sent() -> None:
    q1, q2, q3 = ({"role": "user", "content": f"question {i}"} for i in (1, 2, 3))
    a1 = {"role": "assistant", "content": "answer 1"}
    a2 = {"role": "assistant", "content": "answer 2"}
    lines = [
        _request([q1], "answer 1"),
        # the same answer sent back with a name the first request could not know of,
        _request([q1, {**a1, "name": "bot"}, q2], "answer 2"),
        # then without it
        _request([q1, a1, q2, a2, q3], "answer 3"),
        _request([q1, a1, q2, a2, q3, {"role": "assistant", "content": "answer 3"},
                  {"role": "user", "content": "question 4"}], "answer 4"),
    ]
    s = InMemoryStorage()
    report = import_text(s, "\n".join(lines))
    assert len({r.thread_id for r in s.runs.list_runs()}) == 1
    runs = [load_run(s, rid) for rid in report.runs_created]
    sent = [[(i.lane, i.message.role, i.message.content, i.message.metadata)
             for i in r.prompt.items] for r in runs if r.prompt is not None]
    assert sent[1][2] == ("recent", "assistant", "answer 1", {"name": "bot"})
    assert sent[2][2] == ("recent", "assistant", "answer 1", {})
    assert sent[3][2] == ("recent", "assistant", "answer 1", {})
    assert sent[3][5] == ("recent", "user", "question 3", {})
    assert [len(s_) for s_ in sent] == [2, 4, 6, 8]
    assert [r.memctx.recent_count for r in runs if r.memctx is not None] == [0, 2, 4, 6]
    assert [[ref.seq for ref in r.memctx.recent] for r in runs if r.memctx] == \
        [[], [0, 1], [0, 1, 2, 3], [0, 1, 2, 3, 4, 5]]
    assert all(verify_run(s, rid).status == "ok" for rid in report.runs_created)


def test_records_written_without_their_models_are_what_the_models_write() -> None:
    """The import writes its import, input, prompt, memctx, persist, step, output and
    seal records as JSON text straight from their fields (a model a run cost a third
    of its time); read back through the journal reader, each is exactly the JSON its
    model dumps, for a tool-call turn, a text turn, a failed request, a message with
    metadata and an answer of text and a call with sampling parameters and usage."""
    from memory_core.journal import RunKeys, RunReader
    from memory_core.journal.seal import read_seal
    from memory_core.types import canonical_json

    call = {"id": "c1", "type": "function",
            "function": {"name": "lookup", "arguments": '{"order": "1042"}'}}
    tool = {"type": "function", "function": {"name": "lookup", "parameters": {}}}
    lines = [
        json.dumps({"request": {"model": "m", "messages": [SYSTEM, {"role": "user",
                    "content": "where is 1042?", "name": "ann"}], "tools": [tool]},
                    "response": {"choices": [{"message": {"role": "assistant",
                                 "content": None, "tool_calls": [call]},
                                 "finish_reason": "tool_calls"}]}}),
        json.dumps({"request": {"model": "m", "tools": [tool], "messages": [
            SYSTEM, {"role": "user", "content": "where is 1042?", "name": "ann"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "shipped"}]},
            "response": {"choices": [{"message": {"role": "assistant",
                                                  "content": "It shipped."}}]}}),
        json.dumps({"request": {"model": "m", "messages": [SYSTEM, {"role": "user",
                    "content": "and 1043?"}]}, "error": {"message": "rate limited"}}),
        json.dumps({"request": {"model": "m", "temperature": 1, "seed": 7, "max_tokens": 50,
                                "tools": [tool], "messages": [
                                    SYSTEM, {"role": "user", "content": "and 1044?"}]},
                    "response": {"model": "m-2024", "usage": {"prompt_tokens": 9,
                                                              "completion_tokens": 4},
                                 "choices": [{"message": {"role": "assistant",
                                              "content": "Checking.", "tool_calls": [call]},
                                              "finish_reason": "tool_calls"}]}}),
    ]
    s = InMemoryStorage()
    report = import_text(s, "\n".join(lines))
    assert len(report.runs_created) == 4
    for rid in report.runs_created:
        reader, keys = RunReader.snapshot(s.runs, rid), RunKeys(rid)
        read = {keys.input: reader.input(), keys.prompt: reader.prompt(),
                keys.memctx: reader.memctx(), keys.persist_input: reader.persist_input(),
                keys.persist_output: reader.persist_output(), keys.output: reader.output(),
                keys.import_: reader.import_record(), keys.step(0): reader.step(0),
                keys.seal: read_seal(s, rid)}
        for key, record in read.items():
            if record is None:
                assert s.runs.get(key) is None, key
                continue
            assert canonical_json(s.runs.get(key)) == \
                canonical_json(record.model_dump(mode="json")), key
        assert verify_run(s, rid).status == "ok"
    # what the step and import records say, the answer of calls only and the text one
    # made without their models, the one of text and a call through them
    steps = [RunReader.snapshot(s.runs, rid).step(0) for rid in report.runs_created]
    said = [(st.response.text, [c.id for c in st.response.tool_calls],
             st.response.finish_reason, st.response.usage.output_tokens,
             (st.model.kind, st.model.name, st.model.temperature, st.model.seed,
              st.model.max_tokens), [t.name for t in st.tools], st.usage_known)
            for st in steps if st is not None]
    assert said == [
        (None, ["c1"], "tool_calls", 0, ("imported", "m", None, None, None), ["lookup"], False),
        ("It shipped.", [], None, 0, ("imported", "m", None, None, None), ["lookup"], False),
        ("Checking.", ["c1"], "tool_calls", 4, ("imported", "m-2024", 1.0, 7, 50),
         ["lookup"], True)]
    imported = RunReader.snapshot(s.runs, report.runs_created[3]).import_record()
    assert imported is not None and imported.where == "line 4" and imported.format == "openai"
    assert imported.request_params == {"temperature": 1, "seed": 7, "max_tokens": 50}


def test_a_json_template_filled_is_the_canonical_json_of_the_value() -> None:
    """The imported records written from templates are byte for byte what
    ``canonical_json`` writes of the same value; a fixed value holding the slot marker
    is refused when the template is made, not written wrong."""
    from json.encoder import encode_basestring

    import pytest

    from memory_core.types import JsonTemplate, canonical_json, json_slot

    fixed = {"z": [1, None, "é\n\"x\""], "a": {"b": True}}
    t = JsonTemplate({**fixed, "m": json_slot("m"), "l": [json_slot("items")]})
    assert sorted(t.names) == ["items", "m"]
    role, items = "tool \"quoted\" ü", [{"k": 1}, "s"]
    assert t.fill({"m": encode_basestring(role),
                   "items": ",".join(canonical_json(i) for i in items)}) \
        == canonical_json({**fixed, "m": role, "l": items})
    with pytest.raises(ValueError, match="slot marker"):
        JsonTemplate({"a": "\ue000", "m": json_slot("m")})
