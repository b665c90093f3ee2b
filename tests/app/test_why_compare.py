"""Compare and Why forgotten, as people read them: Compare's lanes agree with its token
table, nothing shows "None"/"nan", reasons name the setting change; the embedding model
a phrase needs loads once behind a visible status."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta

import pytest
from streamlit.testing.v1 import AppTest

from app import services
from app.components import COMPARE_PAGE, WHY_PAGE, fmt_cell, fmt_score, fmt_time, truncate
from memory_core.composition.memory import AgentMemory
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.models.scripted import ScriptedModel
from memory_core.recall.config import RecallConfig
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.inmemory import InMemoryStorage
from tests.app.fixture_db import (
    AGENT,
    ANSWER_1,
    FAQ_RUNS,
    FILTER,
    INSTRUCTIONS,
    LOWER_RUN,
    QUESTION,
    RESOURCE,
    RUN_1,
    T0,
    THREAD,
    THRESHOLD,
    FixtureInfo,
    fixed_clock,
    records,
)
from tests.app.markdown import tables
from tests.app.test_pages import json_blocks

MakeApp = Callable[..., AppTest]
Populated = tuple[InMemoryStorage, FixtureInfo]
TOP_K_RUNS = ("run-top-1", "run-top-4")  # the fixture's recall with top_k 1, then 4
_LANE_HEADER = re.compile(r"^\*\*(?P<title>[A-Za-z ]+)\*\* \((?P<n>\d+)(?: · (?P<t>\d+) tokens)?\)$")
TITLES = {"Recalled": "recalled", "Recent": "recent", "Input": "input"}


def _top_k_pair(storage: InMemoryStorage) -> None:
    """RUN_1's question asked twice more, a day later, with top_k 1 and then 4."""
    clock = fixed_clock(T0 + timedelta(days=1))
    for run_id, k in zip(TOP_K_RUNS, (1, 4), strict=True):
        memory = AgentMemory(storage, embed=HashingEmbedder(), recent_n=3, clock=clock,
                             recall=RecallConfig(top_k=k, threshold=THRESHOLD,
                                                 scope="resource", filter=FILTER,
                                                 message_range=0, near_misses=4))
        agent = Agent(AGENT, INSTRUCTIONS, ScriptedModel([ANSWER_1]))
        Runner(storage, {AGENT: agent}, memory=memory, clock=clock).run(
            AGENT, run_id=run_id, thread_id=THREAD, resource_id=RESOURCE, prompt=QUESTION)


def _rendered(at: AppTest) -> list[str]:
    """Every text the page shows, table cells included."""
    out = [e.value for e in (*at.markdown, *at.caption, *at.text, *at.info)]
    out += [f"{m.label} {m.value}" for m in at.metric]
    for t in tables(at):
        out += [v for row in t.rows for v in row.values()]
    return out


def _lane_headers(at: AppTest) -> list[tuple[str, int, int | None]]:
    heads = []
    for m in at.markdown:
        if (hit := _LANE_HEADER.match(m.value)) and hit["title"] in TITLES:
            heads.append((TITLES[hit["title"]], int(hit["n"]),
                          int(hit["t"]) if hit["t"] else None))
    return heads


def _compare(populated: Populated, app: MakeApp, pair: tuple[str, str]) -> AppTest:
    _top_k_pair(populated[0])
    at = app(COMPARE_PAGE, a=pair[0], b=pair[1])
    assert not at.exception and not at.error
    return at


@pytest.mark.parametrize("pair", [(RUN_1, LOWER_RUN), FAQ_RUNS, TOP_K_RUNS])
def test_lanes_agree_with_the_token_table(populated: Populated, app: MakeApp,
                                          pair: tuple[str, str]) -> None:
    storage, _ = populated
    at = _compare(populated, app, pair)
    tokens = next(t.frame() for t in tables(at) if "delta" in t.columns)
    table = {row["lane"]: (int(row["run A"].replace(",", "")), int(row["run B"].replace(",", "")))
             for _, row in tokens.iterrows()}
    heads = _lane_headers(at)
    assert len(heads) == 2 * len(TITLES)  # each lane of run A, then of run B
    for i, (lane, n, shown_tokens) in enumerate(heads):
        side = 0 if i < len(TITLES) else 1
        data = records(storage, pair[side])
        assert n == sum(1 for it in data.prompt.items if it.lane == lane), (pair, lane)
        title = next(t for t, ln in TITLES.items() if ln == lane)
        assert shown_tokens == table[title][side]
        assert (n == 0) == (shown_tokens == 0), (pair, lane, n, shown_tokens)


@pytest.mark.parametrize("pair", [(RUN_1, LOWER_RUN), FAQ_RUNS, TOP_K_RUNS])
def test_compare_never_shows_none_or_nan(populated: Populated, app: MakeApp,
                                         pair: tuple[str, str]) -> None:
    at = _compare(populated, app, pair)
    for text in _rendered(at):
        assert not re.search(r"\b(None|nan|NaN|null)\b", text), text
    # scores are 3 decimals wherever they appear
    changes = next((t.frame() for t in tables(at) if "change" in t.columns), None)
    if changes is not None:
        # (a column no change has a score in is left out, and said so); a cell is run A's
        # score → run B's
        for cell in changes.get("score (A → B)", []):
            assert cell == "—" or re.fullmatch(r"(—|-?\d+\.\d{3}) → (—|-?\d+\.\d{3})",
                                               cell), cell


def test_a_reason_names_the_top_k_change(populated: Populated, app: MakeApp) -> None:
    at = _compare(populated, app, TOP_K_RUNS)
    assert list(json_blocks(at)[0]) == ["top_k"]
    changes = next(t.frame() for t in tables(at) if "change" in t.columns)
    entered = changes[(changes["change"] == "entered")
                      & changes["lane (A → B)"].str.endswith(" → recalled")]
    assert len(entered) >= 1
    for _, row in entered.iterrows():
        rank_b = row["rank (A → B)"].split(" → ")[1]
        assert row["reason"] == ("kept out of run A by beyond-top-k: recall top_k 1 → 4 "
                                 f"let it in (rank {rank_b})")
    assert any(c.value.replace("\\", "").startswith("recall top_k 1 → 4 let it in (rank ")
               for c in at.caption)
    # the run pickers tell runs apart to the second



def test_formats_are_one_helper_each() -> None:
    assert [fmt_score(x) for x in (0.619, 0.4849, 0.4344174265861511, None,
                                   float("nan"), 1)] == [
        "0.619", "0.485", "0.434", "—", "—", "1.000"]
    assert [fmt_cell(x) for x in (None, float("nan"), 0.5, "None", {"a": 1}, 3)] == [
        "—", "—", "0.500", "None", '{"a": 1}', "3"]
    assert fmt_time(T0 + timedelta(seconds=7)) == "2026-01-05 09:00:07"
    assert fmt_time((T0 + timedelta(seconds=7)).isoformat()) == "2026-01-05 09:00:07"
    assert truncate("short", 10) == "short"
    assert truncate("a  long\ntext that goes on", 10) == "a long te…"
    assert len(truncate("x" * 50, 10)) == 10


def test_the_embedding_model_loads_once_behind_a_status(
        spinner_log: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[str] = []
    recorded = {"r-minilm": "all-MiniLM-L6-v2", "r-hash": "hashing-64", "r-none": None}
    monkeypatch.setattr(services, "cached_run_embedder", lambda _url, run: recorded[run])
    monkeypatch.setattr(services, "_embedding_model", lambda name: loads.append(name))
    for run in ("r-hash", "r-none", "r-minilm", "r-minilm"):
        services.load_run_embedder("memory://x", run)
    assert loads == ["all-MiniLM-L6-v2"]
    assert spinner_log == ["Loading the embedding model (all-MiniLM-L6-v2)…"]


# -- bounded pickers: a picker offering every run (or message) is sent whole on every
# script run, so they offer one thread's and find the rest ---------------------------
def _picker(at: AppTest, label: str) -> object:
    return next(w for w in at.selectbox if w.label == label)


def _offered(at: AppTest, label: str) -> list[str]:
    """What a picker offers, by the first part of each option's label (an id, #seq); a
    run picker's by the last ("<time> · “<question>” · <id>")."""
    at_end = label.startswith("Run")
    return [o.split(" · ")[-1 if at_end else 0]
            for o in _picker(at, label).options]  # type: ignore[attr-defined]


def test_compare_offers_the_threads_runs_and_finds_another_threads(
        populated: Populated, app: MakeApp) -> None:
    storage, _ = populated
    on_thread = [r.run_id for r in storage.runs.list_runs(thread_id=THREAD)]
    at = app(COMPARE_PAGE, a=RUN_1, b=on_thread[-1])
    assert not at.exception and not at.error
    for label in ("Run A", "Run B"):  # this thread's runs only, not the database's
        assert _offered(at, label) == on_thread
    faq = FAQ_RUNS[1]
    assert faq not in on_thread
    at.text_input(key="find-run").set_value("faq").run()
    assert faq in _offered(at, "Run A")
    _picker(at, "Run A").set_value(faq).run()  # type: ignore[attr-defined]
    assert not at.exception and not at.error
    assert (at.query_params["a"], at.query_params["find"]) == (faq, "faq")
    # the URL reopens the cross-thread pair, search or not
    for query in ({"a": faq, "b": on_thread[-1]}, {"a": faq, "b": on_thread[-1], "find": ""}):
        shared = app(COMPARE_PAGE, **{k: v for k, v in query.items() if v})
        assert not shared.exception and not shared.error
        assert _picker(shared, "Run A").value == faq  # type: ignore[attr-defined]
        assert _picker(shared, "Run B").value == on_thread[-1]  # type: ignore[attr-defined]


def test_why_picks_a_thread_then_one_of_its_messages(populated: Populated,
                                                     app: MakeApp) -> None:
    from tests.app.fixture_db import SIBLING

    storage, _ = populated
    at = app(WHY_PAGE, run=RUN_1)
    assert not at.exception and not at.error
    threads = _picker(at, "Message thread")
    assert _offered(at, "Message thread")[0] == THREAD  # the run's, then its resource's
    assert SIBLING in _offered(at, "Message thread")
    own = [f"#{m.seq}" for m in storage.memory.get_messages(THREAD)]
    assert _offered(at, "Message") == own
    threads.set_value(SIBLING).run()  # type: ignore[attr-defined]
    sibling = [(SIBLING, m.seq) for m in storage.memory.get_messages(SIBLING)]
    assert _offered(at, "Message") == [f"#{seq}" for _, seq in sibling]
    _picker(at, "Message").set_value(sibling[-1]).run()  # type: ignore[attr-defined]
    assert not at.exception and not at.error
    assert (at.query_params["thread"], at.query_params["seq"]) == (SIBLING, str(sibling[-1][1]))
    shared = app(WHY_PAGE, **{k: at.query_params[k] for k in at.query_params})
    assert _picker(shared, "Message thread").value == SIBLING  # type: ignore[attr-defined]
    assert _picker(shared, "Message").value == sibling[-1]  # type: ignore[attr-defined]


def test_compare_builds_unchanged_cards_only_when_opened(populated: Populated,
                                                         app: MakeApp) -> None:
    storage, _ = populated
    on_thread = [r.run_id for r in storage.runs.list_runs(thread_id=THREAD)]
    at = app(COMPARE_PAGE, a=on_thread[0], b=on_thread[1])
    assert not at.exception and not at.error
    badges = " ".join(m.value for m in at.markdown)
    assert "drag_handle: same]" not in badges  # no unchanged card yet
    boxes = [e for e in at.expander if "unchanged (this lane in both runs)" in e.label]
    assert boxes
    keys = [f"same-{side}-{lane}" for side in "AB"
            for lane in ("recalled", "recent", "input", "dropped", "compacted")]
    for key in keys:
        at.session_state[key] = True
    at.run()
    assert not at.exception and not at.error
    shown = sum(int(e.label.split()[0]) for e in at.expander
                if "unchanged (this lane in both runs)" in e.label)
    assert " ".join(m.value for m in at.markdown).count("drag_handle: same]") == shown
