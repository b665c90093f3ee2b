"""Journal records are read through one upgrade path: old formats are lifted, malformed
ones raise an InvalidInputError naming the journal key — in analysis and in the views."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory_core.analysis import views
from memory_core.errors import InvalidInputError
from memory_core.journal import load_run
from memory_core.provenance.prompt import FrozenPrompt, PromptItem
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message, RunRecord

T0 = datetime(2027, 1, 1, tzinfo=UTC)
PROMPT = FrozenPrompt(items=[PromptItem(lane="input", message=Message(content="hi"))]).to_json()
# a :memctx record as SPEC §6.4-6.5 defines it for the seed (camelCase, "v" always 1)
SPEC_MEMCTX = {
    "v": 1, "threadId": "t", "incomingCount": 1, "echoTrimmed": 0,
    "recalled": [{"threadId": "t", "seq": 0, "role": "user", "preview": "old", "score": 0.9,
                  "origin": "hit"}],
    "recentCount": 2,
    "recent": [{"threadId": "t", "seq": 1, "role": "assistant", "preview": "noted"},
               {"threadId": "t", "seq": 2, "role": "user", "preview": "ok"}],
    "droppedCount": 1,
    "dropped": [{"threadId": "t", "seq": 3, "role": "assistant", "preview": "→ refund({})",
                 "reason": "unanswered-tool-call"}],
    "observationCount": 0, "workingMemoryChars": 0,
}


def storage_with(**entries: object) -> InMemoryStorage:
    s = InMemoryStorage()
    s.runs.start_run(RunRecord(run_id="r", agent="a", thread_id="t", started_at=T0))
    for key, value in entries.items():
        s.runs.put_if_absent(f"r:{key}", value)
    return s


def test_a_spec_shaped_seed_memctx_is_shown_by_the_inspector() -> None:
    s = storage_with(prompt=PROMPT, memctx=SPEC_MEMCTX)
    view = views.run_view(s, "r")
    assert view.settings["recent_n"] == 2  # the seed record's recentCount, upgraded
    assert len(view.lane("input").items) == 1
    memctx = load_run(s, "r").memctx
    assert memctx is not None and memctx.recalled[0].thread_id == "t"
    assert [d.reason for d in memctx.dropped] == ["unanswered-tool-call"]


@pytest.mark.parametrize(("key", "value", "where"), [
    ("memctx", {"v": 1, "thread_id": "t", "settings": {"recent_n": "many",
                                                        "recall_enabled": False}},
     "'r:memctx' is malformed at settings.recent_n"),
    ("step:0", {"v": 1, "response": {"text": 5}}, r"'r:step:0' is malformed at response.text"),
])
def test_malformed_records_name_the_key(key: str, value: object, where: str) -> None:
    s = storage_with(prompt=PROMPT, **{key: value})
    with pytest.raises(InvalidInputError, match=where):
        load_run(s, "r")
    with pytest.raises(InvalidInputError, match=where):
        views.run_view(s, "r")


def test_a_malformed_prompt_names_the_key() -> None:
    s = storage_with(prompt={"v": 1, "items": [{"lane": "nowhere", "message": {}}]})
    with pytest.raises(InvalidInputError, match="'r:prompt' is malformed at items.0.lane"):
        load_run(s, "r")
