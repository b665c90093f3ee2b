"""An imported multi-agent conversation on the pages: each message says which agent
wrote it (the OpenAI message's ``name``), on the Threads page and in the run inspector's
lanes; its threads, of no resource, are shown picked under "(no resource)"."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from streamlit.testing.v1 import AppTest

from app.components import RUN_PAGE, THREADS_PAGE
from memory_core.importers import import_file
from memory_core.storage.inmemory import InMemoryStorage
from tests.app.markdown import tables


def _log(tmp_path: Path, first: str = "Plan a trip to Lisbon.", *, created: int = 1,
         name: str = "team.jsonl") -> Path:
    messages = [
        {"role": "system", "content": "You are a team of agents."},
        {"role": "user", "content": first, "name": "Eva"},
        {"role": "assistant", "content": "Three days: Alfama, Belém, Sintra.",
         "name": "planner"},
        {"role": "user", "content": "Check the plan for *gaps*.", "name": "critic_agent"},
        {"role": "assistant", "content": "Noted.", "name": "Assistant"}]
    record = {"request": {"model": "gpt-4o-mini", "messages": messages},
              "response": {"id": "chatcmpl-1", "object": "chat.completion", "created": created,
                           "model": "gpt-4o-mini",
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant",
                                                    "content": "Add a rest day."}}]}}
    path = tmp_path / name
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    return path


def test_each_message_names_the_agent_that_wrote_it(
        empty_db: InMemoryStorage, app: Callable[..., AppTest], tmp_path: Path) -> None:
    report = import_file(empty_db, _log(tmp_path))
    (run_id,) = report.runs_created
    thread = empty_db.runs.require_run(run_id).thread_id
    assert thread is not None
    at = app(THREADS_PAGE, thread=thread)
    assert not at.exception and not at.error
    heads = [h for c in at.caption if (h := str(c.value).replace("\\", "")).startswith("#")]
    assert any(" · user (Eva) · " in h for h in heads), heads
    assert any(" · assistant (planner) · " in h for h in heads), heads
    # a name as stored, never read as Markdown
    assert any(" · user (critic_agent) · " in h for h in heads), heads
    # a name that only repeats the role is not said again ("assistant (Assistant)")
    assert "Noted." in [t.value for t in at.text]
    assert not any("(Assistant)" in h for h in heads), heads
    # a title shorter than the cut is shown as it is
    (table,) = [t for t in tables(at) if "title" in t.columns]
    assert [t.replace("\\", "") for t in table["title"]] == ["Plan a trip to Lisbon."]
    at = app(RUN_PAGE, run=run_id)
    assert not at.exception and not at.error
    captions = [str(c.value).replace("\\", "") for c in at.caption]
    assert any(c.startswith("assistant (planner) · ") for c in captions), captions


def test_the_no_resource_group_is_shown_picked(
        empty_db: InMemoryStorage, app: Callable[..., AppTest], tmp_path: Path) -> None:
    """An imported file's threads belong to no resource: the Threads page's Resource
    picker showed "Choose an option" (nothing picked) above "Threads of (no resource)"."""
    import_file(empty_db, _log(tmp_path))
    at = app(THREADS_PAGE)
    assert not at.exception and not at.error
    (picker,) = [s for s in at.selectbox if s.label == "Resource"]
    assert picker.value is not None
    assert picker.format_func(picker.value) == "(no resource)"
    assert [s.value.replace("\\", "") for s in at.subheader] == ["Threads of (no resource)"]


def test_a_title_cut_at_its_length_says_so(empty_db: InMemoryStorage,
                                            app: Callable[..., AppTest],
                                            tmp_path: Path) -> None:
    """A thread's title is its first user text cut to 80 characters (SPEC §2.5): the
    table read "…and should arrive on 14 M" as if that were all."""
    from memory_core.composition.memory import TITLE_CHARS

    first = ("I ordered a backpack as order A-4437; it cost 87 euros and should arrive on "
             "14 May, but the tracking page has not moved since Monday.")
    import_file(empty_db, _log(tmp_path, first))
    at = app(THREADS_PAGE)
    assert not at.exception and not at.error
    (table,) = [t for t in tables(at) if "title" in t.columns]
    (title,) = table["title"]
    assert title.replace("\\", "") == first[:TITLE_CHARS] + "…"


def test_threads_are_listed_newest_first_by_the_time_shown(
        empty_db: InMemoryStorage, app: Callable[..., AppTest], tmp_path: Path) -> None:
    """An import writes its threads when it runs: a file of February imported after one
    of April was listed above it, its "last activity" out of order."""
    from datetime import UTC, datetime

    from memory_core.analysis import views

    april = int(datetime(2026, 4, 21, tzinfo=UTC).timestamp())
    february = int(datetime(2026, 2, 25, tzinfo=UTC).timestamp())
    import_file(empty_db, _log(tmp_path, "Plan a trip to Porto.", created=april, name="a.jsonl"))
    import_file(empty_db, _log(tmp_path, "Plan a trip to Faro.", created=february,
                               name="b.jsonl"))
    listed = views.thread_summaries(empty_db, None)
    assert [t.title for t in listed] == ["Plan a trip to Porto.", "Plan a trip to Faro."]
    assert listed[0].last_activity > listed[1].last_activity
