"""The Counterfactual page's model choice (AppTest): the model the run used by default,
the offline reader as the explicit alternative; a model that cannot be asked (no server
configured) disables the buttons and says which variable to set."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from app import services
from app.components import COUNTERFACTUAL_PAGE
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.storage.inmemory import InMemoryStorage
from sample_data.build import EPOCH, DemoClock, play_scenario
from sample_data.scenarios.home import HOME
from tests.app.markdown import tables
from tests.fake_provider.server import FakeProvider
from tests.helpers import copy_run_with_model

MakeApp = Callable[..., AppTest]
SOURCE = "home-worktops"  # the offline reader answered it from 3 recalled messages
IMPORTED = {"kind": "imported", "name": "gpt-4o-mini-2024-07-18", "temperature": 0.0}
_names = itertools.count()


@pytest.fixture(scope="module")
def home() -> InMemoryStorage:
    clock = DemoClock()
    storage = InMemoryStorage(clock=clock)
    play_scenario(storage, HOME, HashingEmbedder(64), clock, lambda _m: None, EPOCH)
    return storage


@pytest.fixture()
def db(home: InMemoryStorage, monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryStorage]:
    for var in ("MEMWB_OPENAI_BASE_URL", "MEMWB_OPENAI_MODEL", "MEMWB_OPENAI_API_KEY",
                "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    url = services.register_storage(f"cfmodels{next(_names)}", home)
    monkeypatch.setenv(services.ENV_VAR, url)
    yield home
    services.unregister_storage(url.removeprefix(services.MEMORY_SCHEME))


def copy_with_model(storage: InMemoryStorage, model: dict[str, Any]) -> str:
    """A copy of the SOURCE run whose steps say ``model`` answered them."""
    return copy_run_with_model(storage, SOURCE, f"copy-{next(_names)}", model)


def _button(at: AppTest, label: str) -> Any:
    return next(b for b in at.button if b.label == label)


def _model_radio(at: AppTest) -> Any:
    return next(r for r in at.radio if r.label == "Model to re-ask")


def _subtract_all_and_run(at: AppTest) -> None:
    at.radio[0].set_value("Subtract all recalled").run()
    _button(at, "Run counterfactual").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(m.value.startswith("## Verdict: :orange-badge") for m in at.markdown)


def test_no_server_configured_disables_the_button_and_names_the_variable(
        db: InMemoryStorage, app: MakeApp) -> None:
    rid = copy_with_model(db, IMPORTED)
    at = app(COUNTERFACTUAL_PAGE, run=rid)
    assert not at.exception
    radio = _model_radio(at)
    assert radio.value == "recorded"
    assert "gpt-4o-mini-2024-07-18 (an imported recording" in \
        radio.format_func("recorded").replace("\\", "")  # type: ignore[attr-defined]
    (warning,) = at.warning
    text = warning.value.replace("\\", "")
    assert "set MEMWB_OPENAI_BASE_URL" in text and "model=" not in text
    for label in ("Run counterfactual", "Run attribution"):
        button = _button(at, label)
        assert button.disabled and "MEMWB_OPENAI_BASE_URL" in (button.help or "")
    # the offline reader is the explicit alternative
    _model_radio(at).set_value("reader").run()
    assert not at.warning and not _button(at, "Run counterfactual").disabled
    _subtract_all_and_run(at)
    assert any("offline-reader" in c.value.replace("\\", "") for c in at.caption)


def test_the_configured_server_answers_with_the_recorded_model_name(
        db: InMemoryStorage, app: MakeApp, monkeypatch: pytest.MonkeyPatch) -> None:
    rid = copy_with_model(db, IMPORTED)
    with FakeProvider() as fp:
        monkeypatch.setenv("MEMWB_OPENAI_BASE_URL", fp.base_url)
        at = app(COUNTERFACTUAL_PAGE, run=rid)
        assert not at.warning and not _button(at, "Run counterfactual").disabled
        _subtract_all_and_run(at)
        assert fp.chat_bodies
        assert {(b["model"], b["temperature"]) for b in fp.chat_bodies} == \
            {("gpt-4o-mini-2024-07-18", 0.0)}


def test_an_openai_run_is_re_asked_at_its_recorded_server_once_confirmed(
        db: InMemoryStorage, app: MakeApp) -> None:
    with FakeProvider() as fp:
        rid = copy_with_model(db, {"kind": "openai", "name": "fake-model",
                                   "base_url": fp.base_url, "temperature": 0.0})
        at = app(COUNTERFACTUAL_PAGE, run=rid)
        (warning,) = at.warning  # the database names a server: asked only once confirmed
        assert "tick the box" in warning.value.replace("\\", "")
        assert _button(at, "Run counterfactual").disabled and not fp.requests
        at.checkbox[0].check().run()
        assert not at.warning
        _subtract_all_and_run(at)
        assert fp.chat_bodies and fp.chat_bodies[0]["model"] == "fake-model"


def test_another_model_is_judged_against_its_baseline_shown_beside_its_answer(
        db: InMemoryStorage, app: MakeApp) -> None:
    """The issue's page: re-asked with the reader, a run another model answered said
    "unchanged" beside similarity 0.000 and two different answers. Now the baseline the
    verdict compared is shown beside the new answer, each answer names its model, and
    the similarity is to that baseline."""
    recorded = "Oak worktops, 3.2 m along the window wall."
    rid = copy_answered_by_gpt(db, recorded)
    at = app(COUNTERFACTUAL_PAGE, run=rid)
    _model_radio(at).set_value("reader").run()
    at.radio[0].set_value("Subtract chosen recalled").run()
    picker = next(m for m in at.multiselect if m.label == "Recalled messages to subtract")
    picker.set_value([("kitchen-plans", 22)]).run()  # "Thanks for the help!"
    _button(at, "Run counterfactual").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(m.value.startswith("## Verdict: :green-badge") for m in at.markdown)
    captions = [c.value.replace("\\", "") for c in at.caption]
    assert any(c.startswith("without kitchen-plans#22 · the new answer is judged against "
                            "the baseline only · similarity 1.000 to the baseline "
                            "answer") for c in captions), captions
    (info,) = [i.value.replace("\\", "") for i in at.info]
    assert "The recorded answer came from `gpt-4o-mini-2024-07-18`" in info
    assert "the verdict compares `offline-reader`'s answers only" in info
    shown = [t.value for t in at.text]
    assert recorded in shown  # the recorded answer, shown …
    assert "Recorded answer · `gpt-4o-mini-2024-07-18` · not compared: another model" in \
        captions
    assert "Baseline · `offline-reader` · re-asked" in captions
    assert "New answer · `offline-reader`" in captions
    # … beside its answers: the baseline and the new answer, the same text
    reader = [t for t in shown if t.startswith("From our conversation:")]
    assert len(reader) == 2 and reader[0] == reader[1]
    past = next(t for t in tables(at) if "judged against" in t.columns)
    assert past["judged against"] == ["baseline · similarity 1.000 · by offline-reader"]


def copy_answered_by_gpt(storage: InMemoryStorage, answer: str) -> str:
    """A copy of SOURCE that the imported model answered with ``answer``."""
    return copy_run_with_model(storage, SOURCE, f"copy-{next(_names)}", IMPORTED, answer)
