"""SPEC §6.8: the Runner with a memory that only offers ``get_messages`` — the prompt
is its history, the record says what is known (recalled [], recent_count, positions as
seqs, structural previews, working memory appended to the system prompt) and marks the
rest unknown; the workbench's view says so instead of inventing a provenance record."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core.analysis.views import UNKNOWN_SETTING, run_view
from memory_core.composition.other_memory import NO_PROVENANCE, UNKNOWN_FIELDS
from memory_core.errors import InvalidInputError
from memory_core.journal import RunReader
from memory_core.journal.seal import verify_run
from memory_core.models.scripted import ScriptedModel
from memory_core.runs.replay import replay
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message, ToolCallPart, ToolResultPart
from tests.helpers import Tick

CALL = ToolCallPart(id="c1", name="lookup", args={"q": "tea"})
HISTORY = [Message(role="user", content="  what   do I like?  "),
           Message(role="assistant", content=[CALL]),
           Message(role="tool", content=[ToolResultPart(call_id="c1", name="lookup",
                                                        result="green tea")]),
           Message(role="assistant", content="You like green tea.")]


class ListMemory:
    """Someone else's memory: a dict of histories and, optionally, a text WM."""

    def __init__(self, wm: str | None = None) -> None:
        self.threads: dict[str, list[Any]] = {"t": list(HISTORY)}
        self.wm = wm
        self.asked: list[str] = []

    def get_messages(self, thread_id: str) -> list[Any]:
        self.asked.append(thread_id)
        return self.threads.get(thread_id, [])

    def get_working_memory(self, thread_id: str) -> str | None:
        return self.wm


class MessagesOnly:
    def __init__(self, history: Any) -> None:
        self.history = history

    def get_messages(self, thread_id: str) -> Any:
        return self.history


def run_with(memory: Any, prompt: Any = "and what else?") -> tuple[InMemoryStorage,
                                                                  ScriptedModel]:
    s = InMemoryStorage(clock=Tick())
    model = ScriptedModel(["coffee too"])
    runner = Runner(s, {"a": Agent(name="a", instructions="be brief", model=model)},
                    memory=memory, clock=Tick())
    runner.run("a", run_id="r1", thread_id="t", resource_id="ayse", prompt=prompt)
    return s, model


def test_spec_6_8_prompt_is_the_memorys_history_and_wm_appended_to_the_system_prompt(
        ) -> None:
    mem = ListMemory(wm="likes: tea")
    s, model = run_with(mem)
    assert mem.asked == ["t"]
    sent = model.seen[0]
    assert sent[0] == Message(role="system",
                              content="be brief\n\n# Working Memory\nlikes: tea")
    assert sent[1:5] == HISTORY and sent[5] == Message(role="user", content="and what else?")
    memctx = RunReader(s.runs, "r1").memctx()
    assert memctx is not None and memctx.messages_only
    assert memctx.recalled == [] and memctx.recent_count == 4
    assert [r.seq for r in memctx.recent] == [0, 1, 2, 3]  # positions
    # the structural preview (§6.3): text as given (not collapsed as §6.2 would), calls
    # and results in their arrow forms
    assert [r.preview for r in memctx.recent] == [
        "  what   do I like?  ", '→ lookup({"q":"tea"})', "lookup → green tea",
        "You like green tea."]
    assert memctx.working_memory_chars == len("# Working Memory\nlikes: tea")
    assert memctx.incoming_count == 1 and memctx.echo_trimmed == 0
    assert memctx.unknown_fields == UNKNOWN_FIELDS and memctx.is_unknown("recent.seq")
    # nothing is written to the memory or to our store; the run seals and replays
    assert s.memory.get_thread("t") is None and mem.threads["t"] == HISTORY
    assert verify_run(s, "r1").status == "ok"
    assert replay(s, "r1").output["text"] == "coffee too"


def test_spec_6_8_without_working_memory_or_instructions_nothing_is_appended() -> None:
    s, model = run_with(MessagesOnly([{"role": "user", "content": "hi"}]))
    assert model.seen[0][0] == Message(role="system", content="be brief")
    memctx = RunReader(s.runs, "r1").memctx()
    assert memctx is not None and memctx.working_memory_chars == 0
    assert memctx.recent_count == 1


def test_spec_6_8_the_input_is_echo_trimmed_against_the_memorys_history() -> None:
    s, model = run_with(ListMemory(), prompt=[*HISTORY, Message(role="user", content="more")])
    memctx = RunReader(s.runs, "r1").memctx()
    assert memctx is not None and memctx.echo_trimmed == 4 and memctx.incoming_count == 1
    assert model.seen[0][-1] == Message(role="user", content="more") and len(model.seen[0]) == 6


def test_spec_6_8_the_run_view_says_the_memory_gives_no_provenance_record() -> None:
    s, _ = run_with(ListMemory())
    view = run_view(s, "r1")
    assert NO_PROVENANCE in view.notes
    assert NO_PROVENANCE.startswith("this memory gives no provenance record")
    assert view.settings["recent_n"] == UNKNOWN_SETTING
    assert view.lane("recalled").items == [] and len(view.lane("recent").items) == 4
    assert all(i.seq is None for i in view.lane("recent").items)  # no stored message
    assert view.answer == "coffee too" and view.query is None


@pytest.mark.parametrize(("memory", "match"), [
    (object(), "memory must be an AgentMemory or offer get_messages"),
    ("memory", "memory must be an AgentMemory or offer get_messages"),
])
def test_spec_6_8_a_memory_without_get_messages_is_refused(memory: Any, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        Runner(InMemoryStorage(), {}, memory=memory)


@pytest.mark.parametrize(("history", "match"), [
    ("not a list", r"get_messages\('t'\) must return a list of messages, got str"),
    ([Message(role="user", content="ok"), 3], r"get_messages\('t'\)\[1\] must be a Message"),
    ([{"role": "wizard", "content": "x"}], r"get_messages\('t'\)\[0\] is not a valid message"),
])
def test_spec_6_8_bad_history_is_one_clear_error_and_nothing_is_journaled(
        history: Any, match: str) -> None:
    s = InMemoryStorage()
    runner = Runner(s, {"a": Agent(name="a", instructions="x", model=ScriptedModel([]))},
                    memory=MessagesOnly(history))
    with pytest.raises(InvalidInputError, match=match):
        runner.run("a", run_id="r1", thread_id="t", prompt="hi")
    assert s.runs.list("r1:input") == [] and s.runs.list("r1:memctx") == []
