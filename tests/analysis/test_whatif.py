"""What if a memory setting had been different: past runs re-composed as of their time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_core.analysis.whatif import parse_changes, quoted_by, what_if
from memory_core.composition.memory import AgentMemory
from memory_core.errors import InvalidInputError, NotFoundError
from memory_core.importers import import_file
from memory_core.journal import load_run
from memory_core.models.reader import ReaderModel
from memory_core.recall.config import RecallConfig
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.base import Storage
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message
from tests.analysis.conftest import KeywordEmbedder, World, recall, user
from tests.fake_provider.server import FakeProvider, Fault
from tests.storage_factories import make_storage

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "imports"


@pytest.fixture(scope="module")
def demo() -> InMemoryStorage:
    from sample_data.build import DemoClock, build_into

    clock = DemoClock()
    storage = InMemoryStorage(clock=clock)
    build_into(storage, clock, embedder="hashing", progress=lambda _m: None)
    return storage


def test_a_setting_that_changes_nothing_changes_no_run(demo: InMemoryStorage) -> None:
    report = what_if(demo, [])
    assert report.runs and report.count("changed") == 0 and report.count("cannot") == 0
    same = what_if(demo, ["recent_n=6"], thread_id="support-3")  # the demo's own value
    assert same.count("changed") == 0 and same.count("unchanged") == len(same.runs)
    assert "0 of" in report.sentence


def test_a_larger_token_budget_keeps_the_gate_code(demo: InMemoryStorage) -> None:
    """The demo's fifth story: the token limiter cut the gate code out of the prompt;
    with a larger budget the same run, as of its time, is given it."""
    run = what_if(demo, ["token_budget=4000"], run_ids=["move-gate-small-budget"]).runs[0]
    assert run.status == "changed"
    recent = next(c for c in run.lanes if c.lane == "recent")
    assert any("4417" in k.preview for k in recent.entered)
    assert run.tokens_after is not None and run.tokens_before is not None
    assert run.tokens_after.recent > run.tokens_before.recent
    assert run.prompt_after is not None and any(
        "4417" in (i.message.text() or "") for i in run.prompt_after.items)


def test_lower_recall_bar_brings_messages_in_and_less_recall_loses_quoted_ones(
        demo: InMemoryStorage) -> None:
    lower = what_if(demo, ["recall.threshold=0.0", "recall.top_k=10"],
                    run_ids=["support-3-forgot"]).runs[0]
    recalled = next(c for c in lower.lanes if c.lane == "recalled")
    assert recalled.entered and not recalled.left
    off = what_if(demo, ["recall=off"])
    lost = [r for r in off.runs if r.key_lost]
    assert lost and all(k.lane_before == "recalled" for r in lost for k in r.key_lost)
    assert "losing a message its answer quoted" in off.sentence


def test_a_recalled_message_entering_or_leaving_says_its_rank_score_and_fate(
        demo: InMemoryStorage) -> None:
    """A what-if listed the recalled messages that enter and leave without their recall:
    one entering has the rank and score the what-if gave it; one leaving has those it
    had as recorded, and what recall now made of it, with the bound it missed."""
    run = what_if(demo, ["recall.threshold=0.0", "recall.top_k=10"],
                  run_ids=["support-3-forgot"]).runs[0]
    [recalled] = [c for c in run.lanes if c.lane == "recalled"]
    assert run.memctx_after is not None
    hits = {(r.thread_id, r.seq): r for r in run.memctx_after.recalled if r.origin == "hit"}
    for k in recalled.entered:
        hit = hits[(k.thread_id, k.seq)]
        assert (k.rank, k.score) == (hit.rank, hit.score) and k.now is None
        assert k.recall_text(entered=True) == f"rank {k.rank}, score {k.score:.3f}"
    fewer = what_if(demo, ["recall.top_k=1"])
    checked = 0
    for r in fewer.runs:
        memctx = load_run(demo, r.run_id).memctx
        assert memctx is not None
        was = {(h.thread_id, h.seq): h for h in memctx.recalled}
        for k in (k for c in r.lanes if c.lane == "recalled" for k in c.left):
            assert (k.rank, k.score) == (was[(k.thread_id, k.seq)].rank,
                                         was[(k.thread_id, k.seq)].score)
            assert k.now == "outside the top 1"
            assert k.recall_text(entered=False) == \
                f"was rank {k.rank}, score {k.score:.3f} · now outside the top 1"
            checked += 1
    assert checked
    higher = what_if(demo, ["recall.threshold=0.99"])
    assert {k.now for r in higher.runs for c in r.lanes for k in c.left} == {
        "below the threshold 0.990"}
    # not among the near misses the what-if keeps (none kept): its cosine says it
    unkept = what_if(demo, ["recall.threshold=0.99", "recall.near_misses=0"])
    assert {k.now for r in unkept.runs for c in r.lanes if c.lane == "recalled"
            for k in c.left} == {"below the threshold 0.990"}


def test_a_what_if_reads_each_thread_once(demo: InMemoryStorage,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Each run is composed twice and a thread has several runs: the thread was read
    again for each (~2 ms a read on DuckDB, half of a 1,000-run what-if). Read once per
    what-if, with the same report."""
    before = what_if(demo, ["recall.threshold=0.3"], thread_id="support-3")
    reads: list[str] = []
    store = demo.memory
    original = store.get_messages

    def counted(thread_id: str, **kw: Any) -> Any:
        reads.append(thread_id)
        return original(thread_id, **kw)

    monkeypatch.setattr(store, "get_messages", counted)
    after = what_if(demo, ["recall.threshold=0.3"], thread_id="support-3")
    assert [r.model_dump() for r in after.runs] == [r.model_dump() for r in before.runs]
    assert len(after.runs) > 5 and reads
    assert len(reads) == len(set(reads)), sorted(reads)


def test_changes_are_checked_and_named() -> None:
    assert parse_changes(["recall.threshold=0.5", "recent_n=6"]).flat() == {
        "recent_n": 6, "recall.threshold": 0.5}
    for bad, named in [("recall.treshold=0.5", "treshold"), ("recent=3", "recent"),
                       ("recall.threshold=2", "threshold"), ("recent_n=-1", "recent_n"),
                       ("token_budget=0", "token budget"), ("recent_n", "key=value"),
                       ("token_priority=input", "priority")]:
        with pytest.raises(InvalidInputError, match=named):
            parse_changes([bad])


def test_a_change_that_needs_the_past_says_so(demo: InMemoryStorage) -> None:
    report = what_if(demo, ["observational=on"], thread_id="support-3")
    assert {r.status for r in report.runs} == {"cannot"}
    assert all("observations as they were then are not recorded" in (r.reason or "")
               for r in report.runs)
    with pytest.raises(NotFoundError, match="no-such-run"):
        what_if(demo, [], run_ids=["no-such-run"])


def test_an_imported_run_is_not_recomposed() -> None:
    storage = InMemoryStorage()
    import_file(storage, FIXTURES / "openai_support.jsonl")
    report = what_if(storage, ["recent_n=2"])
    assert report.runs and {r.status for r in report.runs} == {"cannot"}
    assert all("imported" in (r.reason or "") for r in report.runs)


def _clock() -> object:
    now = [datetime(2027, 3, 1, tzinfo=UTC)]

    def tick() -> datetime:
        now[0] += timedelta(seconds=1)
        return now[0]
    return tick


@pytest.mark.parametrize("adapter", ["inmemory", "duckdb-file", "sqlite",
                                     pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_message_stored_after_a_run_never_reaches_its_what_if(adapter: str,
                                                                 tmp_path: Path) -> None:
    """Point in time: the what-if of a run sees the store as it was when the run
    started, on every adapter — later messages of its thread and of the owner's other
    threads stay out, however well they match and however wide recall is opened."""
    clock = _clock()
    storage: Storage = make_storage(adapter, tmp_path, clock=clock)
    embed = KeywordEmbedder()
    memory = AgentMemory(storage, embed=embed, recent_n=2, clock=clock,
                         recall=RecallConfig(top_k=2, threshold=0.9, scope="resource"))
    memory.append("old", [user("The blender refund was approved.")], "r1", created_at=clock())
    memory.append("cur", [user("hello"), user("weather talk"), user("lamp talk")], "r1",
                  created_at=clock())
    runner = Runner(storage, {"a": Agent(name="a", instructions="Answer.",
                                         model=ReaderModel(embed=embed))},
                    memory=memory, clock=clock)
    runner.run("a", run_id="r-1", thread_id="cur", resource_id="r1",
               prompt="What about the blender refund?")
    # after the run: more refund talk in its thread, its owner's threads, a new thread
    memory.append("cur", [user("The blender refund is 240 euros.")], "r1", created_at=clock())
    memory.append("old", [user("Blender refund: paid out.")], "r1", created_at=clock())
    memory.append("later", [user("Blender refund, refund, blender.")], "r1",
                  created_at=clock())
    report = what_if(storage, ["recall.threshold=0.0", "recall.top_k=50", "recent_n=50"],
                     run_ids=["r-1"], embed=embed)
    run = report.runs[0]
    assert run.status == "changed", run.reason
    assert run.prompt_after is not None
    seen = {(i.thread_id, i.seq) for i in run.prompt_after.items if i.thread_id}
    assert ("old", 0) in seen  # what existed then comes in
    assert {("cur", 0), ("cur", 2)} <= seen  # the window widened, as of then
    # the run's own input and answer (3, 4) and what came later never do
    assert not {("cur", 3), ("cur", 4), ("cur", 5), ("old", 1)} & seen
    assert not any(t == "later" for t, _ in seen)
    texts = " ".join(i.message.text() or "" for i in run.prompt_after.items)
    assert "240" not in texts and "paid out" not in texts
    storage.close()


def test_a_run_recomposed_with_its_own_settings_must_match_its_record(
        world: World) -> None:
    """Drift is not a change: when the store no longer gives a run's recorded prompt
    (here its window's message was rewritten since), the run is reported as one that
    cannot be re-composed, never as changed."""
    world.say("t", "r", user("first"), user("second"), user("third"))
    world.run("r-1", "t", "r", "what was first?", memory=world.memory(recall=recall()))
    first = what_if(world.storage, ["recent_n=3"], embed=world.embed).runs[0]
    assert first.status == "changed", first.reason
    world.storage.memory.redact_message("t", 2, Message(content="[gone]"))
    run = what_if(world.storage, ["recent_n=3"], embed=world.embed).runs[0]
    assert run.status == "cannot" and "recorded prompt" in (run.reason or "")


def test_what_the_answer_quotes() -> None:
    msg = Message(content="The caretaker says the gate code is 4417.")
    assert quoted_by("Your gate code is 4417.", msg)
    assert quoted_by("the caretaker says the gate code works", msg)
    assert not quoted_by("I don't know the code.", msg)
    assert not quoted_by(None, msg)
    # a number is one number as written: "10%" is not the "10" of an address range, and
    # two digits single out nothing (the trial: "about 10% better" quoted an IP range)
    address = Message(content="Staging accepts connections from 10.8.0.0/16 only.")
    assert not quoted_by("3.11's faster interpreter shows: about 10% better.", address)
    assert quoted_by("Allow 10.8.0.0/16 in the firewall.", address)
    # a number the question holds, or the conversation's topic, quotes no one message
    celery = Message(content="Celery 5.3 supports 3.11; 5.2 has a known issue.")
    assert quoted_by("Yes, 3.11 works.", celery)
    assert not quoted_by("Yes, 3.11 works.", celery, said={"3.11"})



def test_re_asked_the_offline_reader_finds_the_gate_code(demo: InMemoryStorage) -> None:
    """Answers that change: the run whose prompt changed is re-asked with the model it
    recorded (the offline reader), judged against its recorded answer, and journaled
    under the what-if's own key — asking again asks nothing."""
    report = what_if(demo, ["token_budget=4000"], run_ids=["move-gate-small-budget"],
                     ask=True)
    run = report.runs[0]
    assert run.answer is not None and run.answer.verdict == "changed"
    assert "4417" in run.answer.new_answer and "4417" not in (run.answer.original_answer or "")
    assert run.answer.key.startswith("move-gate-small-budget:cf:")
    assert run.answer.variant.settings == {"token_budget": 4000}
    assert "Re-asked, 1 of 1 answer changed." in report.sentence
    again = what_if(demo, ["token_budget=4000"], run_ids=["move-gate-small-budget"],
                    ask=True).runs[0]
    assert again.answer == run.answer
    unchanged = what_if(demo, ["recent_n=6"], thread_id="support-3", ask=True)
    assert all(r.answer is None for r in unchanged.runs)  # nothing changed: nothing asked


def test_an_interrupted_what_if_resumes_without_asking_twice(
        fake_provider: FakeProvider, world: World) -> None:
    """The strict fake provider counts the requests: a what-if whose model stops
    answering midway is asked again, and only what was never answered is asked."""
    from memory_core.models.openai_chat import OpenAIChatModel

    model = OpenAIChatModel(base_url=fake_provider.base_url, model="fake-model",
                            temperature=0.0, max_retries=0)
    world.say("t", "r", user("The gate code is 4417."), user("weather"), user("lamp"),
              user("kettle"))
    mem = world.memory(recent_n=1)
    for i in range(3):
        world.run(f"r-{i}", "t", "r", f"What is the gate code? ({i})", memory=mem,
                  model=model)
    asked_by_runs = len(fake_provider.chat_bodies)
    # a model the caller names is asked the unchanged prompt too (a baseline), then the
    # new one: two requests a run; the second run's second request fails
    fake_provider.fail_next(Fault("server_error"), after=3)
    first = what_if(world.storage, ["recent_n=8"], model=model, embed=world.embed,
                    concurrency=1)
    changed = [r for r in first.runs if r.status == "changed"]
    assert len(changed) == 3
    assert [r.ask_error is not None for r in changed] == [False, True, False]
    asked_first = len(fake_provider.chat_bodies) - asked_by_runs
    assert asked_first == 6  # 2 answered, 1 answered + 1 failed, 2 answered
    second = what_if(world.storage, ["recent_n=8"], model=model, embed=world.embed,
                     concurrency=2)
    # only the failed request is asked again: the second run's baseline answer and
    # the other runs' results were journaled
    assert len(fake_provider.chat_bodies) - asked_by_runs - asked_first == 1
    assert all(r.answer is not None for r in second.runs if r.status == "changed")
    assert [r.answer for r in second.runs if r.run_id != "r-1"] == \
        [r.answer for r in first.runs if r.run_id != "r-1"]


@pytest.mark.slow
def test_a_killed_what_if_resumes_without_asking_again(fake_provider: FakeProvider,
                                                      tmp_path: Path) -> None:
    """SIGKILL mid-way: ``memwb whatif --ask`` is killed while the model answers its
    fourth request; run again, it asks only what no answer was journaled for."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from memory_core.models.scripted import ScriptedModel
    from memory_core.storage.sqlite import SQLiteStorage

    db = tmp_path / "w.sqlite"
    clock = _clock()
    s = SQLiteStorage(str(db), clock=clock)
    mem = AgentMemory(s, recent_n=1, clock=clock)
    mem.append("t", [user(f"note {i}") for i in range(5)], "r", created_at=clock())
    runner = Runner(s, {"a": Agent(name="a", instructions="Answer.",
                                   model=ScriptedModel(["ok", "ok", "ok"]))},
                    memory=mem, clock=clock)
    for i in range(3):
        runner.run("a", run_id=f"r-{i}", thread_id="t", resource_id="r",
                   prompt=f"question {i}")
    s.close()
    args = ["whatif", "--db", f"sqlite:///{db}", "--set", "recent_n=8", "--ask",
            "--model", "fake-model", "--base-url", fake_provider.base_url,
            "--concurrency", "1", "--repeats", "1"]
    fake_provider.fail_next(Fault("delay", 60.0), after=3)  # the 4th request hangs
    env = {**os.environ, "MEMWB_OPENAI_API_KEY": "k", "MEMWB_OPENAI_MAX_RETRIES": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "memory_core.cli", *args], env=env,
                            cwd=Path(__file__).resolve().parents[2],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(fake_provider.chat_bodies) < 4 and time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert len(fake_provider.chat_bodies) == 4
    s = SQLiteStorage(str(db))
    journaled = [k for k, _ in s.runs.list("") if ":answer:" in k]
    assert len(journaled) == 3  # answered before the kill: 2 + 1
    s.close()
    done = subprocess.run([sys.executable, "-m", "memory_core.cli", *args], env=env,
                          cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # 3 runs x (baseline + variant) = 6 answers; 3 were journaled: 3 asked again
    assert len(fake_provider.chat_bodies) == 4 + 3
    assert "Re-asked, " in done.stdout


def test_the_conversation_s_topic_number_is_no_quote(demo: InMemoryStorage) -> None:
    """A trial: with observational memory off, py311-migration-t21 (its answer "3.11's
    faster interpreter shows: about 10% better.") was said to lose the messages of the
    10.8.0.0/16 range, "mypy to 1.10" and Celery on 3.11 — "10" and "3.11" matched as
    tokens. None of them is quoted."""
    report = what_if(demo, ["observational=off"], thread_id="py311-migration")
    by_run = {r.run_id: r for r in report.runs}
    assert by_run["py311-migration-t21"].key_messages == []
    assert by_run["py311-migration-t22"].key_messages == []


def test_a_recall_field_does_not_turn_recall_on(demo: InMemoryStorage) -> None:
    """A trial: ``recall.top_k=1`` on trip-1-t02, a run whose recall was off, added a
    recalled message (a whole default recall config was built for it); on 5,000 runs
    lowering top_k "added messages" to 1,307. A recall field changes recall where it
    ran; ``recall=on`` turns it on. Where recall was off the change does not apply, and
    says so (another trial: it read "unchanged", and a regression suite "ok")."""
    report = what_if(demo, ["recall.top_k=1"], run_ids=["trip-1-t02"])
    run = report.runs[0]
    assert run.status == "cannot" and run.reason == (
        "recall.top_k was changed, but recall was off in this run: give recall=on too"), run
    assert run.recall_off  # told apart from a run whose composition is not recorded
    assert report.sentence.endswith(
        "1 could not be re-composed with it (recall.top_k was changed, but recall was off "
        "in this run: give recall=on too).")
    run = what_if(demo, ["recall=on", "recall.top_k=1"], run_ids=["trip-1-t02"]).runs[0]
    assert run.status == "changed" and run.entered, run


@pytest.mark.parametrize(("items", "error"), [
    (["recent_n=true"], "recent_n takes no true/false"),
    (["token_budget=true"], "token_budget takes no true/false"),
    (["recall=true"], "recall takes no true/false, got True; write on or off"),
    (["recall.top_k=true"], "recall.top_k takes no true/false"),
    (["recent_n=3", "recent_n=5"], "setting 'recent_n' is given twice"),
    (["token_priority="], "token_priority names no lane"),
    (["token_budget=abc"], "token_budget: .* .got 'abc'.; write a number or off$"),
    # (a trial: the value was said twice, "got 1.5 (got 1.5)"; "on" named as off)
    (["recall.threshold=1.5"], r"threshold must be in \[-1, 1\], got 1.5$"),
    (["working_memory=on"], r"'resource' \(got 'on'\); write off, thread or resource$"),
])
def test_settings_are_read_strictly(items: list[str], error: str) -> None:
    with pytest.raises(InvalidInputError, match=error):
        parse_changes(items)


def test_settings_are_said_as_written() -> None:
    changes = parse_changes(["token_budget=OFF", "recall.filter=null"])
    assert changes.token_budget == "off"
    assert changes.describe() == "token_budget = off, recall.filter = null"


def test_repeats_without_asking_is_refused(demo: InMemoryStorage) -> None:
    """``repeats`` asks each prompt several times: without asking it did nothing."""
    with pytest.raises(InvalidInputError, match="repeats asks each prompt several times"):
        what_if(demo, ["recent_n=2"], run_ids=["trip-1-t02"], repeats=3)


def test_a_thread_outside_the_resource_given_is_refused(demo: InMemoryStorage) -> None:
    """A thread and a resource that do not go together read "no runs to re-compose"
    (a trial), as if the change touched nothing; it is an error naming the thread's own
    resource, as a run given with a thread is."""
    thread = next(t for t in demo.memory.list_threads() if t.resource_id is not None)
    other = next(r for r in demo.memory.list_resources() if r != thread.resource_id)
    with pytest.raises(InvalidInputError, match=f"thread '{thread.id}' is not in resource "
                                                f"'{other}': it belongs to resource "
                                                f"'{thread.resource_id}'"):
        what_if(demo, ["recent_n=2"], thread_id=thread.id, resource_id=other)
    assert what_if(demo, ["recent_n=2"], thread_id=thread.id,
                   resource_id=thread.resource_id).runs
