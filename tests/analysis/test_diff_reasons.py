"""diff_runs: the input lane holds the run's own question (so lanes agree with the
token counts), and each entered/left reason names the setting change behind it."""

from __future__ import annotations

from memory_core.analysis.diff import diff_runs
from memory_core.journal import load_run
from memory_core.types import Message, TextPart, ToolCallPart, ToolResultPart
from tests.analysis.conftest import World, assistant, hybrid_pair, recall, user

QUESTION = "What did we decide about the refund for my blender?"


def _world(world: World, *, a: dict[str, int], b: dict[str, int]) -> World:
    w = world
    w.say("old", "r1",
          user("The refund for the blender was approved: 240 euros."),
          user("Refund ok?"),
          user("The lamp refund is pending."),
          user("Blender refund, kettle refund, lamp refund."),
          assistant("Noted."))
    w.say("cur", "r1", user("Hello"), assistant("Hi!"), user("Quick thing first."),
          assistant("Sure."))
    for run_id, s in (("ra", a), ("rb", b)):
        w.run(run_id, "cur", "r1", QUESTION,
              memory=w.memory(recent_n=s.get("recent_n", 2),
                              recall=recall(top_k=s.get("top_k", 1), threshold=0.1)))
    return w


def _lanes(diff_entries: list, side: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in diff_entries:
        lane = e.lane_a if side == "A" else e.lane_b
        if lane is not None:
            out[lane] = out.get(lane, 0) + 1
    return out


def test_every_lane_with_tokens_has_its_messages(world: World) -> None:
    w = _world(world, a={"top_k": 1}, b={"top_k": 3})
    d = diff_runs(w.storage, "ra", "rb", embed=w.embed)
    for side, run_id in (("A", "ra"), ("B", "rb")):
        data = load_run(w.storage, run_id)
        lanes = _lanes(d.entries, side)
        for lane in ("recalled", "recent", "input"):
            held = sum(1 for it in data.prompt.items if it.lane == lane)
            assert lanes.get(lane, 0) == held, (side, lane)
        assert lanes["input"] == 1 and d.token_deltas["input"][0 if side == "A" else 1] > 0
    # run A's question is stored under the seq its persist record names
    stored = load_run(w.storage, "ra").persist_input
    assert stored is not None
    qa = next(e for e in d.entries if e.lane_a == "input")
    assert (qa.thread_id, qa.seq) == ("cur", stored.seqs[0]) and qa.reason.startswith(
        "run A's question")
    qb = next(e for e in d.entries if e.lane_b == "input")
    assert qb.change == "entered" and qb.reason.startswith("run B's question")


def test_a_raised_top_k_is_named_as_what_let_a_message_in(world: World) -> None:
    w = _world(world, a={"top_k": 1}, b={"top_k": 3})
    d = diff_runs(w.storage, "ra", "rb", embed=w.embed)
    assert d.settings_changed["top_k"] == (1, 3)
    entered = [e for e in d.entries if e.change == "entered" and e.lane_b == "recalled"]
    assert entered
    for e in entered:
        assert e.reason == f"recall top_k 1 → 3 let it in (rank {e.rank_b})"
        assert e.rank_b is not None and e.rank_b > 1  # beyond run A's top 1
    back = diff_runs(w.storage, "rb", "ra", embed=w.embed)
    left = [e for e in back.entries if e.change == "left" and e.lane_a == "recalled"]
    assert left and all(e.reason.startswith("recall top_k 3 → 1 left it out (rank ")
                        for e in left)


def test_a_smaller_recent_window_is_named_as_what_left_a_message_out(world: World) -> None:
    w = _world(world, a={"recent_n": 4}, b={"recent_n": 2})
    d = diff_runs(w.storage, "ra", "rb", embed=w.embed)
    left = [e for e in d.entries if e.change == "left" and e.lane_a == "recent"]
    assert any(e.reason == "recent window 4 → 2 left it out, and it was not recalled"
               for e in left), [e.reason for e in left]
    # missing scores are "—" in sentences, never "None" or "nan"
    assert not any("None" in e.reason or "nan" in e.reason for e in d.entries)


def test_a_branch_s_copies_of_the_shared_conversation_are_the_same_messages() -> None:
    """Two runs of two threads, the second a branch of the first (it stores the
    conversation they share again): Compare said the shared messages left and others
    entered — the same question and answer under two refs. Copies are the same message;
    only the question that differs left and entered."""
    import json

    from memory_core.importers import import_text
    from memory_core.storage.inmemory import InMemoryStorage

    def line(messages: list[dict[str, str]], answer: str) -> str:
        return json.dumps({"request": {"model": "m", "messages": messages}, "response": {
            "choices": [{"message": {"role": "assistant", "content": answer}}]}})
    asked = {"role": "user", "content": "Where do we deploy this service?"}
    said = {"role": "assistant", "content": "On the staging cluster, port 9431."}
    s = InMemoryStorage()
    report = import_text(s, "\n".join([
        line([asked], said["content"]),
        line([asked, said, {"role": "user", "content": "Which port again?"}], "9431."),
        line([asked, said, {"role": "user", "content": "Who owns it?"}], "Team Otter.")]))
    assert len(report.threads_created) == 2
    diff = diff_runs(s, report.runs_created[1], report.runs_created[2])
    changes = sorted((e.change, e.preview) for e in diff.entries)
    assert changes == [("entered", "Who owns it?"), ("left", "Which port again?"),
                       ("same", "On the staging cluster, port 9431."),
                       ("same", "Where do we deploy this service?")], changes


def test_a_neighbour_of_a_hit_is_said_so_not_ranked_none(world: World) -> None:
    """Compare said "recalled in run B (rank None → None, score —)" of a message run B
    recalled beside a hit (hybrid recall's neighbours, a 5,000-run database)."""
    w = world
    w.say("old", "r1", user("Nice weather today."),
          user("The refund for the blender was approved: 240 euros."),
          assistant("Noted, thanks."))
    w.say("cur", "r1", user("Hello"), assistant("Hi!"), user("Quick thing first."))
    w.run("ra", "cur", "r1", QUESTION, memory=w.memory(recall=recall(top_k=1, threshold=0.1)))
    w.run("rb", "cur", "r1", QUESTION, memory=w.memory(
        recall=recall(top_k=1, threshold=0.1, message_range=1)))
    d = diff_runs(w.storage, "ra", "rb", embed=w.embed)
    entered = [e for e in d.entries if e.change == "entered" and e.lane_b == "recalled"]
    assert entered
    assert all(e.reason.startswith("recalled in run B as the neighbour of a hit")
               for e in entered), [e.reason for e in entered]
    assert not any("None" in e.reason for e in d.entries)


def test_the_other_half_of_a_recalled_tool_call_is_said_so(world: World) -> None:
    """Run B recalls a tool call (the hit) and composition pulls in its result to keep
    the pair whole: Compare says the result came to complete the call, not a rank."""
    w = world
    w.say("old", "r1",
          Message(role="assistant", content=[
              TextPart(text="Checking the refund for the blender."),
              ToolCallPart(id="tc-1", name="refund", args={"item": "blender"})]),
          Message(role="tool", content=[ToolResultPart(call_id="tc-1", name="refund",
                                                       result="ok 17")]),
          user("Nice weather today."))
    w.say("cur", "r1", user("Hello"), assistant("Hi!"), user("Quick thing first."))
    w.run("ra", "cur", "r1", QUESTION, memory=w.memory())  # no recall
    w.run("rb", "cur", "r1", QUESTION, memory=w.memory(recall=recall(top_k=1, threshold=0.1)))
    d = diff_runs(w.storage, "ra", "rb", embed=w.embed)
    entered = {(e.thread_id, e.seq): e.reason for e in d.entries
               if e.change == "entered" and e.lane_b == "recalled"}
    assert entered[("old", 1)] == \
        "recalled in run B to complete a recalled tool call (recall off → on)", entered
    # written before run A, which recalled nothing: not "new"
    assert entered[("old", 0)] == "recall off → on let it in (rank 1, score 1.000)", entered
    assert not any("None" in e.reason for e in d.entries)


def test_a_neighbour_run_b_did_not_bring_is_said_so(world: World) -> None:
    """The other way round: run A recalled it beside a hit, run B not; Compare said
    "score moved across the threshold: 0.000 → -0.292" of a message with no score of its
    own in run A (a walk on the 5,000-run file)."""
    w = world
    w.say("old", "r1", user("Nice weather today."),
          user("The refund for the blender was approved: 240 euros."),
          assistant("Noted, thanks."))
    w.say("cur", "r1", user("Hello"), assistant("Hi!"), user("Quick thing first."))
    w.run("ra", "cur", "r1", QUESTION, memory=w.memory(
        recall=recall(top_k=1, threshold=0.1, message_range=1)))
    w.run("rb", "cur", "r1", QUESTION, memory=w.memory(recall=recall(top_k=1, threshold=0.1)))
    d = diff_runs(w.storage, "ra", "rb", embed=w.embed)
    left = [e for e in d.entries if e.change == "left" and e.lane_a == "recalled"]
    assert left
    assert all(e.reason.startswith("recalled in run A only as the neighbour of a hit, "
                                   "which run B did not recall") for e in left), \
        [e.reason for e in left]


def test_a_hybrid_bar_is_said_of_the_similarity(world: World) -> None:
    """Hybrid recall's bar bounds the similarity, while Compare's score column shows
    the fused score: "score moved across the threshold: 1.000 → -0.196" sat beside
    "7.127 → 0.000". The reason names the similarity, and that no word was shared."""
    w = hybrid_pair(world)
    d = diff_runs(w.storage, "ra", "rb", embed=w.embed)
    left = {(e.thread_id, e.seq): e.reason for e in d.entries
            if e.change == "left" and e.lane_a == "recalled"}
    assert ("old", 0) in left, left
    assert left[("old", 0)].startswith("similarity moved across the threshold: 1.000 → "), left
    assert "(bar 0.500), sharing no word with run B's question" in left[("old", 0)]
    assert not any(r.startswith("score moved") for r in left.values())
    # the diff says its scores are fused (Compare names the column so), and only then
    assert d.fused_scores


def test_a_diff_of_vector_runs_has_no_fused_scores(world: World) -> None:
    w = world
    w.say("t", "r1", user("The refund for the blender was approved."), assistant("Noted."))
    w.run("va", "t", "r1", QUESTION, memory=w.memory(recall=recall(top_k=1, threshold=0.1)))
    w.run("vb", "t", "r1", QUESTION, memory=w.memory(recall=recall(top_k=2, threshold=0.1)))
    assert not diff_runs(w.storage, "va", "vb", embed=w.embed).fused_scores


def test_a_hybrid_score_in_a_reason_is_called_fused() -> None:
    """Compare's reason "new message, recalled in run B (score 3.379)" gave a fused
    score (a sum of reciprocal ranks) the name of a similarity; in hybrid recall it
    says "fused score", in vector recall "score"."""
    reasons = {}
    for mode in ("hybrid", "vector"):
        w = World()
        w.say("old", "r1", user("Nice weather today."), assistant("Noted."))
        w.say("cur", "r1", user("Hello"), assistant("Hi!"))
        rc = recall(top_k=3, threshold=0.1, mode=mode)
        w.run("ra", "cur", "r1", QUESTION, memory=w.memory(recall=rc))
        w.say("old", "r1", user("The refund for the blender was approved: 240 euros."))
        w.run("rb", "cur", "r1", QUESTION, memory=w.memory(recall=rc))
        d = diff_runs(w.storage, "ra", "rb", embed=w.embed)
        reasons[mode] = [e.reason for e in d.entries
                         if e.change == "entered" and e.lane_b == "recalled"]
    assert any(r.startswith("new message, recalled in run B (fused score ")
               for r in reasons["hybrid"]), reasons
    assert any(r.startswith("new message, recalled in run B (score ")
               for r in reasons["vector"]), reasons
