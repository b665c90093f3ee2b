"""why_forgotten names every fate with its evidence and a plain sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core.analysis.forgotten import lifeline, why_forgotten
from memory_core.errors import NotFoundError
from memory_core.types import Message, TextPart, ToolCallPart, ToolResultPart
from tests.analysis.conftest import World, assistant, recall, user

QUESTION = "What did we decide about the refund for my blender?"


@pytest.fixture
def story(world: World) -> World:
    w = world
    w.say("old", "r1",
          user("The refund for the blender was approved: 240 euros.", lang="de"),  # 0: 1.00
          assistant("Noted."),                                                    # 1: 0.21
          user("Refund ok?", lang="en"),                                          # 2: 0.72
          user("The lamp refund is pending.", lang="en"),                         # 3: 0.52
          user("Nice weather today.", lang="en"),                                 # 4: 0.06
          Message(role="assistant", content=[                                     # 5: 1.00
              TextPart(text="Starting the blender refund now."),
              ToolCallPart(id="c1", name="refund", args={"order": "A-1"})]),
          Message(role="tool", content=[                                          # 6: no text
              ToolResultPart(call_id="c9", name="lookup", result={"ok": True})]))
    w.say("other", "r2", user("The refund for the blender was approved in the other shop."))
    w.say("cur", "r1", user("Hello"), assistant("Hi!"), user("Quick thing first."))
    w.run("r-main", "cur", "r1", QUESTION,
          memory=w.memory(recall=recall(top_k=3, threshold=0.5)))
    return w


def test_recalled_with_rank_and_score(story: World) -> None:
    e = why_forgotten(story.storage, embed=story.embed, run_id="r-main", target=("old", 0))
    assert e.fate == "recalled" and e.reached_model
    assert e.evidence["rank"] in (1, 2) and e.evidence["score"] == pytest.approx(1.0, abs=1e-3)
    assert "recall ranked it #" in e.sentence and "the bar was 0.50" in e.sentence


def test_a_hybrid_hit_says_its_fused_score_and_its_similarity(world: World) -> None:
    """Hybrid recall ranks by a fused score, its bar on the similarity: "ranked it #1
    with a similarity of 1.499 (the bar was 0.000 …)" read as a cosine above 1 (a trial).
    Both are said, and which the bar applies to."""
    w = world
    w.say("old", "r1", user("The refund for the blender was approved: 240 euros."))
    w.say("cur", "r1", user("Hello"), assistant("Hi!"), user("Quick thing first."))
    w.run("r-hyb", "cur", "r1", QUESTION,
          memory=w.memory(recall=recall(top_k=3, threshold=0.2, mode="hybrid")))
    e = why_forgotten(w.storage, embed=w.embed, run_id="r-hyb", target=("old", 0))
    assert e.fate == "recalled"
    assert "with a fused score of " in e.sentence and ", a similarity of " in e.sentence
    assert "(the bar, on the similarity, was 0.200, top 3 were kept)" in e.sentence


def test_dropped_unanswered_tool_call(story: World) -> None:
    e = why_forgotten(story.storage, embed=story.embed, run_id="r-main", target=("old", 5))
    assert e.fate == "dropped" and not e.reached_model
    assert e.evidence["reason"] == "unanswered-tool-call"
    assert "tool call whose result was never stored" in e.sentence


def test_beyond_top_k(story: World) -> None:
    e = why_forgotten(story.storage, embed=story.embed, run_id="r-main", target=("old", 3))
    assert e.fate == "beyond-top-k"
    assert e.evidence["rank"] == 4 and e.evidence["top_k"] == 3
    assert e.evidence["score"] == pytest.approx(0.5215, abs=1e-3)
    assert "ranked #4 and only the top 3 are passed on" in e.sentence


def test_below_threshold(story: World) -> None:
    e = why_forgotten(story.storage, embed=story.embed, run_id="r-main", target=("old", 4))
    assert e.fate == "below-threshold"
    assert e.evidence["threshold"] == 0.5 and e.evidence["score"] < 0.5
    assert "below the bar of 0.50" in e.sentence


def test_recent_window(story: World) -> None:
    e = why_forgotten(story.storage, embed=story.embed, run_id="r-main", target=("cur", 1))
    assert e.fate == "recent" and e.reached_model
    assert "last 2 messages" in e.sentence


def test_input_and_written_after(story: World) -> None:
    msgs = story.storage.memory.get_messages("cur")
    q = next(m for m in msgs if m.run_id == "r-main" and m.role == "user")
    a = next(m for m in msgs if m.run_id == "r-main" and m.role == "assistant")
    assert why_forgotten(story.storage, embed=story.embed, run_id="r-main", target=("cur", q.seq)).fate == "input"
    e = why_forgotten(story.storage, embed=story.embed, run_id="r-main", target=("cur", a.seq))
    assert e.fate == "written-after" and "written after this run" in e.sentence
    story.say("old", "r1", user("The blender refund arrived."))
    later = story.storage.memory.max_seq("old")
    assert why_forgotten(story.storage, embed=story.embed, run_id="r-main", target=("old", later)).fate == "written-after"


def test_no_text(story: World) -> None:
    e = why_forgotten(story.storage, embed=story.embed, run_id="r-main", target=("old", 6))
    assert e.fate == "no-text" and "no text" in e.sentence


def test_other_resource_is_out_of_scope(story: World) -> None:
    e = why_forgotten(story.storage, embed=story.embed, run_id="r-main", target=("other", 0))
    assert e.fate == "out-of-scope" and e.evidence["scope"] == "other-resource"
    assert "another owner (r2)" in e.sentence


def test_other_thread_under_thread_scope(story: World) -> None:
    story.run("r-thread", "cur", "r1", QUESTION,
              memory=story.memory(recall=recall(top_k=3, threshold=0.5, scope="thread")))
    e = why_forgotten(story.storage, embed=story.embed, run_id="r-thread", target=("old", 0))
    assert e.fate == "out-of-scope" and e.evidence["scope"] == "other-thread"
    assert "thread scope" in e.sentence


def test_filtered_out_names_the_clause(story: World) -> None:
    story.run("r-filter", "cur", "r1", QUESTION, memory=story.memory(
        recall=recall(top_k=3, threshold=0.5, filter={"lang": {"$eq": "en"}})))
    e = why_forgotten(story.storage, embed=story.embed, run_id="r-filter", target=("old", 0))
    assert e.fate == "filtered-out"
    assert "lang" in e.evidence["filter_clause"]
    assert "the recall filter excluded it" in e.sentence


def test_recall_off(story: World) -> None:
    story.run("r-off", "cur", "r1", QUESTION, memory=story.memory(recall=None))
    e = why_forgotten(story.storage, embed=story.embed, run_id="r-off", target=("old", 0))
    assert e.fate == "recall-off" and "Recall was off" in e.sentence
    # "old" is another conversation: no recent window holds it, so the window is not why
    assert e.sentence == ("Recall was off for this run, and this message is in another "
                          "conversation (old): only recall reaches beyond the conversation "
                          "the assistant is in.")


def test_text_target_and_not_stored(story: World) -> None:
    e = why_forgotten(story.storage, embed=story.embed, run_id="r-main", target="lamp refund")
    assert (e.thread_id, e.seq, e.fate) == ("old", 3, "beyond-top-k")
    # no stored message holds these words or (keyword axes) anything close in meaning
    n = why_forgotten(story.storage, embed=story.embed, run_id="r-main",
                      target="zebra crossing for cash")
    assert n.fate == "not-stored" and "No stored message contains" in n.sentence


def test_unknown_run_and_ref(story: World) -> None:
    with pytest.raises(NotFoundError, match="nope"):
        why_forgotten(story.storage, embed=story.embed, run_id="nope", target=("old", 0))
    with pytest.raises(NotFoundError, match="old#99"):
        why_forgotten(story.storage, embed=story.embed, run_id="r-main", target=("old", 99))
    with pytest.raises(NotFoundError, match="ghost"):
        why_forgotten(story.storage, embed=story.embed, run_id="r-main", target=("ghost", 0))


def test_compacted_into_observation(world: World) -> None:
    from memory_core.composition.observational import ObservationalConfig
    from memory_core.models.scripted import ScriptedModel

    w = world
    w.say("long", "r1", user("The refund for the blender was approved."),
          assistant("Noted."), user("The lamp costs 30 euros."), assistant("OK."),
          user("Nice weather."), assistant("Indeed."))
    summary = ScriptedModel(["- [seq 0] The refund for the blender was approved."])
    mem = w.memory(observational_memory=ObservationalConfig(model=summary,
                                                            message_threshold=4))
    w.run("r-om", "long", "r1", "How much is the lamp?", memory=mem)
    kept = why_forgotten(w.storage, embed=w.embed, run_id="r-om", target=("long", 0))
    lost = why_forgotten(w.storage, embed=w.embed, run_id="r-om", target=("long", 2))
    assert kept.fate == lost.fate == "compacted"
    assert kept.evidence["fact_survives"] is True
    assert lost.evidence["fact_survives"] is False
    assert lost.evidence["from_seq"] == 0 and lost.evidence["to_seq"] >= 2
    assert "the summary no longer mentions it" in lost.sentence
    # a message after the observed ones: in the window observational memory keeps
    recent = why_forgotten(w.storage, embed=w.embed, run_id="r-om", target=("long", 5))
    assert recent.fate == "recent", recent
    assert "messages of the conversation not yet condensed into observations, which " \
        "are always included." in recent.sentence, recent.sentence


def test_lifeline_follows_a_message_across_runs(world: World) -> None:
    w = world
    mem = w.memory(recall=recall(top_k=1, threshold=0.5, scope="thread"))
    w.say("t", "r1", user("The refund for the blender was approved."))
    w.run("l1", "t", "r1", "Nice weather?", memory=mem, model=_s("ok"))
    w.run("l2", "t", "r1", "Weather tomorrow?", memory=mem, model=_s("ok"))
    w.run("l3", "t", "r1", QUESTION, memory=mem, model=_s("ok"))
    fates = [p.fate for p in lifeline(w.storage, "t", 0, embed=w.embed)]
    assert fates[0] == "recent"
    assert fates[-1] == "recalled"
    assert "below-threshold" in fates  # left the window, not relevant to the weather


def _s(text: str) -> object:
    from memory_core.models.scripted import ScriptedModel

    return ScriptedModel([text])


def test_lifeline_rejects_unknown_threads_messages_and_runs(story: World) -> None:
    st = story.storage
    with pytest.raises(NotFoundError, match="thread 'ghost'"):
        lifeline(st, "ghost", 0, embed=story.embed)
    with pytest.raises(NotFoundError, match="old#99"):
        lifeline(st, "old", 99, embed=story.embed)
    with pytest.raises(NotFoundError, match="thread 'nowhere'"):
        lifeline(st, "old", 0, embed=story.embed, runs_of="nowhere")
    with pytest.raises(NotFoundError, match="'r-gone' of thread 'cur'"):
        lifeline(st, "old", 0, embed=story.embed, runs_of="cur", run_ids=["r-main", "r-gone"])
    picked = lifeline(st, "old", 0, embed=story.embed, runs_of="cur", run_ids=["r-main"])
    assert [p.run_id for p in picked] == ["r-main"]


class _NoEmbedder:
    name = "keyword-test"

    def __call__(self, texts: object) -> object:
        raise AssertionError("a record-only fate loaded the embedder")


def test_the_record_alone_tells_the_fates_its_near_misses_hold(story: World) -> None:
    """The workbench's story page asks for a fate without an embedding model: the run's
    recorded near misses give the same fate and evidence the re-scoring gives."""
    from memory_core.analysis.forgotten import explain_message
    from memory_core.journal import load_run

    data = load_run(story.storage, "r-main")
    near = {(n.thread_id, n.seq) for n in data.memctx.near_misses}
    assert ("old", 3) in near  # beyond top-k, recorded
    scored = 0
    for ref in sorted(near):
        msg = story.storage.memory.get_messages(ref[0], seqs=[ref[1]])[0]
        recorded = explain_message(story.storage, data, msg, rescore=False,
                                   embed=_NoEmbedder())
        rescored = why_forgotten(story.storage, embed=story.embed, run_id="r-main",
                                 target=ref)
        assert recorded.fate == rescored.fate, ref
        if recorded.fate in ("below-threshold", "beyond-top-k"):
            assert recorded.evidence["rank"] == rescored.evidence["rank"]
            assert recorded.evidence["recorded"] is True
            scored += 1
    assert scored
    far = story.storage.memory.get_messages("old", seqs=[4])[0]  # scored far below the bar
    if ("old", 4) not in near:
        out = explain_message(story.storage, data, far, rescore=False)
        assert out.fate == "unexplained" and "not among the closest matches" in out.sentence


def test_inspect_shows_a_hybrid_hit_s_similarity_beside_its_fused_score(
        world: World, tmp_path: Path) -> None:
    """inspect printed a hybrid hit's fused score alone, as 1.3480324094259575, beside a
    threshold that applies to the similarity (a trial): scores to three places, and a
    similarity column where a score is fused; a vector-mode run has no such column."""
    from memory_core.analysis.views import run_view
    from memory_core.storage.duckdb import DuckDBStorage
    from tests.test_cli import memwb, ok

    db = tmp_path / "hybrid.duckdb"
    w = world
    w.storage = DuckDBStorage(db, clock=w.clock)
    w.say("old", "r1", user("The refund for the blender was approved: 240 euros."))
    w.say("cur", "r1", user("Hello"), assistant("Hi!"), user("Quick thing first."))
    w.run("r-hyb", "cur", "r1", QUESTION,
          memory=w.memory(recall=recall(top_k=3, threshold=0.2, mode="hybrid")))
    w.run("r-vec", "cur", "r1", QUESTION,
          memory=w.memory(recall=recall(top_k=3, threshold=0.2)))
    [hit] = [i for i in run_view(w.storage, "r-hyb").lane("recalled").items if i.rank == 1]
    assert hit.similarity is not None and hit.score is not None and hit.score > hit.similarity
    w.storage.close()
    lines = ok(memwb("inspect", "r-hyb", "--db", str(db))).splitlines()
    assert lines[0].split()[:6] == ["lane", "thread_id", "seq", "role", "score", "similarity"]
    row = next(ln for ln in lines if ln.startswith("recalled") and " old " in f" {ln} ")
    assert f" {hit.score:.3f} " in row and f" {hit.similarity:.3f} " in row
    assert "similarity" not in ok(memwb("inspect", "r-vec", "--db", str(db))).splitlines()[0]
