"""Why forgotten, Compare and the story page show every rule that kept a message out
(AppTest): on the demo database the app tests use, a message of support-3-forgot under
the bar and beyond top-k, the refund no threshold would admit; on a small world, a pair
of runs whose settings changed both; the story's plain words name both."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from streamlit.testing.v1 import AppTest

from app.components import COMPARE_PAGE, WHY_PAGE
from app.story_parts import key_fate
from memory_core.analysis.forgotten import explain_message
from memory_core.composition.memory import AgentMemory
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.journal import load_run
from memory_core.models.scripted import ScriptedModel
from memory_core.recall.config import RecallConfig
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.inmemory import InMemoryStorage
from tests.analysis.conftest import QUESTION, Clock, World, assistant, user
from tests.app.conftest import served
from tests.app.markdown import tables
from tests.app.test_story import BANNED

MakeApp = Callable[..., AppTest]
RUN = "support-3-forgot"


def _plain(at: AppTest) -> list[str]:
    return [e.value.replace("\\", "") for e in (*at.markdown, *at.caption, *at.info)]


def test_why_lists_both_rules_in_order_on_the_demo(demo: InMemoryStorage, app: MakeApp) -> None:
    # support-1#4 ("I paid 240 euros"): 0.263 under the bar of 0.450, fourth of three
    at = app(WHY_PAGE, run=RUN, thread="support-1", seq="4")
    assert not at.exception and not at.error
    shown = _plain(at)
    assert ("## :red-badge[:material/block: below-threshold] "
            ":red-badge[:material/block: beyond-top-k]") in shown
    assert "#### Kept out by" in shown
    assert ("1. **below-threshold** — below the threshold (0.263 < 0.450). It would have "
            "passed with a threshold of 0.263 or lower.\n2. **beyond-top-k** — beyond top-k "
            "(rank 4, top-k 3). It would have passed with a top-k of 4 or more.") in shown
    (info,) = [i.value.replace("\\", "") for i in at.info]
    assert info.endswith("It would have been recalled only with a threshold of 0.263 or "
                         "lower and a top-k of 4 or more, together: either alone still "
                         "leaves it out.")
    assert any(c.startswith("To check it, compose the run again with these settings (the "
                             f"What if page, or `memwb whatif --run {RUN} --set "
                             "recall.threshold=0.263 --set recall.top_k=4`)")
               for c in shown)
    lifeline = next(t.frame() for t in tables(at) if "fate" in t.columns)
    row = lifeline[lifeline["run"] == RUN].iloc[0]
    assert row["fate"] == "below-threshold + beyond-top-k"


def test_why_on_the_demo_refund_says_no_threshold_admits_it(demo: InMemoryStorage,
                                                            app: MakeApp) -> None:
    # with the hashing embedder the refund scores under 0: one rule, and no bar lifts it
    refund = next(m for m in demo.memory.get_messages("support-1")
                  if (m.text() or "").startswith("The refund of €240"))
    at = app(WHY_PAGE, run=RUN, thread="support-1", seq=str(refund.seq))
    assert not at.exception and not at.error
    shown = _plain(at)
    assert "## :red-badge[:material/block: below-threshold]" in shown
    assert "#### Kept out by" not in shown and not any(s.startswith("To check it")
                                                       for s in shown)
    (info,) = [i.value.replace("\\", "") for i in at.info]
    assert info.endswith("No threshold would have let it in: a message must score above 0 "
                         "to be recalled.")


@pytest.fixture()
def pair(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[InMemoryStorage, tuple[str, int]]]:
    """Two runs of one question with the hashing embedder: run "narrow" keeps the top 1
    above a bar set just over the third message's score, "wide" the top 5 just under it.
    Yields the storage and that third message."""
    clock = Clock()
    storage = InMemoryStorage(clock=clock)
    embed = HashingEmbedder()
    w = World()
    w.storage, w.clock, w.embed = storage, clock, embed  # type: ignore[assignment]
    w.say("old", "r1", user("The refund for the blender was approved: 240 euros."),
          user("Blender refund approved."), user("The refund of the blender is done."),
          user("Refund the blender, please."), user("Nice weather today."))
    w.say("cur", "r1", user("Hello"), assistant("Hi!"))

    def config(**kw: object) -> RecallConfig:
        return RecallConfig(scope="resource", near_misses=10, **kw)  # type: ignore[arg-type]

    probe = AgentMemory(storage, embed=embed, clock=clock, recent_n=2,
                        recall=config(top_k=1, threshold=0.0)).load_context(
        thread_id="cur", resource_id="r1", input=[user(QUESTION)])
    third = sorted(probe.memctx.near_misses, key=lambda n: n.rank)[1]  # rank 1 is the hit
    assert third.rank == 3 and third.score > 0.01
    for run_id, top_k, bar in (("narrow", 1, third.score + 0.005),
                               ("wide", 5, third.score - 0.005)):
        memory = AgentMemory(storage, embed=embed, clock=clock, recent_n=2,
                             recall=config(top_k=top_k, threshold=round(bar, 4)))
        Runner(storage, {"a": Agent("a", "Answer.", ScriptedModel(["OK."]))}, memory=memory,
               clock=clock).run("a", run_id=run_id, thread_id="cur", resource_id="r1",
                                prompt=QUESTION)
    yield from ((s, (third.thread_id, third.seq)) for s in served(storage, monkeypatch))


def test_compare_names_both_changes_and_both_rules(
        pair: tuple[InMemoryStorage, tuple[str, int]], app: MakeApp) -> None:
    storage, (tid, seq) = pair
    at = app(COMPARE_PAGE, a="narrow", b="wide")
    assert not at.exception and not at.error
    changes = next(t.frame() for t in tables(at) if "reason" in t.columns)
    row = changes[changes["message"] == f"{tid} #{seq}"].iloc[0]
    assert (row["change"], row["lane (A → B)"]) == ("entered", "— → recalled")
    # every rule, in the run it was out of, leads the reason
    lead = "kept out of run A by below-threshold + beyond-top-k: "
    assert row["reason"].startswith(lead)
    reason = row["reason"].removeprefix(lead)
    thr = load_run(storage, "narrow").memctx.settings.recall.threshold  # type: ignore[union-attr]
    wide = load_run(storage, "wide").memctx.settings.recall.threshold  # type: ignore[union-attr]
    assert reason.startswith(f"recall threshold {thr:.3f} → {wide:.3f} and recall "
                             "top_k 1 → 5 let it in: in run A it was below the threshold (")
    assert reason.endswith("and beyond top-k (rank 3, top-k 1)")
    # the card says it whole too
    assert any(c == reason for c in (x.value.replace("\\", "") for x in at.caption))


def test_the_story_names_both_rules_plainly() -> None:
    """key_fate reads the fate from the run's record alone (no re-scoring), as the
    story page does."""
    w = World()
    w.say("old", "r1", user("The refund for the blender was approved."),
          user("Blender refund: approved, 240 euros."), user("Refund ok?"),
          user("The lamp refund is pending."), user("The refund, the lamp and the voucher."))
    w.say("cur", "r1", user("Hello"), assistant("Hi!"))
    w.run("r", "cur", "r1", QUESTION, model=ScriptedModel(["OK."]),
          memory=w.memory(recall=RecallConfig(scope="resource", top_k=2, threshold=0.5)))
    msg = w.storage.memory.get_messages("old", seqs=[4])[0]
    fate = explain_message(w.storage, load_run(w.storage, "r"), msg, rescore=False)
    given, sentence = key_fate(fate, "the voucher")
    assert given is False
    assert sentence == (
        "The voucher matched the question 43 %, under the minimum of 50 %; and even with a "
        "lower minimum, 4 messages matched better while only the 2 closest are handed "
        "over. So it was not handed over. Only a minimum lowered to its match together "
        "with handing over the 5 closest would have let it in; either change alone still "
        "leaves it out.")
    assert not BANNED.search(sentence)
