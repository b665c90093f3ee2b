"""Imported runs analysed through a configured OpenAI-compatible server (the fake
provider): counterfactual, attribution, why-forgotten, replay and diff work with no
``model=`` — the recorded model name is asked of the configured server."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core.analysis.counterfactual import attribution, counterfactual
from memory_core.analysis.diff import diff_runs
from memory_core.analysis.forgotten import why_forgotten
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.importers import import_file
from memory_core.journal import load_run
from memory_core.runs.replay import replay
from memory_core.storage.inmemory import InMemoryStorage
from tests.fake_provider.server import FakeProvider
from tests.fake_provider.validation import validate_request

IMPORTS = Path(__file__).resolve().parents[1] / "fixtures" / "imports"


@pytest.mark.parametrize("name", ["openai_support.jsonl", "otel_genai.json"])
def test_imported_runs_are_analysed_through_the_configured_server(
        name: str, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMWB_OPENAI_BASE_URL", fake_provider.base_url)
    monkeypatch.delenv("MEMWB_OPENAI_MODEL", raising=False)
    s = InMemoryStorage()
    report = import_file(s, IMPORTS / name, embed=HashingEmbedder(64))
    runs = [rid for rid in report.runs_created if load_run(s, rid).steps]
    assert runs
    rid = runs[-1]
    data = load_run(s, rid)
    recorded = data.model
    assert recorded is not None and recorded.kind == "imported"
    assert replay(s, rid).steps >= 1
    asked = len(fake_provider.chat_bodies)
    lanes = sorted({it.lane for it in data.prompt.items} & {"recent"}) or []
    res = counterfactual(s, rid, lanes=lanes)
    assert res.verdict in ("changed", "unchanged", "inconclusive")
    bodies = fake_provider.chat_bodies[asked:]
    assert bodies, "the configured server was not asked"
    for body in bodies:  # the recorded model name, valid requests only
        assert body["model"] == recorded.name
        validate_request(body)
    items = attribution(s, rid, include_lanes=True)
    assert all(i.verdict in ("changed", "unchanged", "inconclusive") for i in items)
    msgs = s.memory.get_messages(data.run.thread_id or "")
    for m in msgs[:3]:
        e = why_forgotten(s, rid, (m.thread_id, m.seq))
        assert e.fate in ("sent-by-client", "not-sent-by-client", "written-after", "input",
                          "unknown")
    if len(runs) > 1:
        assert diff_runs(s, runs[0], rid).entries is not None


def test_a_subtraction_that_cuts_a_tool_exchange_takes_it_out_whole() -> None:
    from memory_core.analysis.counterfactual import whole_exchanges
    from memory_core.models.openai_codec import to_openai_messages
    from memory_core.provenance.prompt import PromptItem
    from memory_core.types import Message, ToolCallPart, ToolResultPart
    from tests.fake_provider.validation import validate_messages

    call = Message(role="assistant", content=[ToolCallPart(id="c1", name="f", args={})])
    result = Message(role="tool", content=[ToolResultPart(call_id="c1", name="f", result=1)])
    items = [PromptItem(lane="instructions", message=Message(role="system", content="s")),
             PromptItem(lane="recent", message=Message(role="user", content="u"), thread_id="t",
                        seq=0),
             PromptItem(lane="input", message=result)]
    kept, gone = whole_exchanges(items)  # the call was subtracted with the recent lane
    assert [it.lane for it in kept] == ["instructions", "recent"] and gone == []
    validate_messages(to_openai_messages([it.message for it in kept]))
    items = [items[0], PromptItem(lane="recent", message=call, thread_id="t", seq=1)]
    kept, gone = whole_exchanges(items)  # a call whose result went
    assert [it.lane for it in kept] == ["instructions"] and gone == [("t", 1)]
