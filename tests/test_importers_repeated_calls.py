"""The same request answered alike twice (a retry, a test suite calling once sync and
once async: openllmetry's and agentops' cassettes) stores its messages once, and both
runs refer to them. The report and the later run's import record say so, so three runs
of two messages are not a puzzle; a request answered otherwise is a branch, no note."""

from __future__ import annotations

import json

from memory_core.importers import import_text
from memory_core.storage.inmemory import InMemoryStorage


def _call(question: str, answer: str) -> str:
    return json.dumps({"request": {"model": "m", "messages": [
        {"role": "user", "content": question}]}, "response": {"choices": [
            {"message": {"role": "assistant", "content": answer}}]}})


NOTE = "the same messages and answer as line 1: stored once, and both runs refer to them"


def test_a_call_repeated_alike_is_stored_once_and_said() -> None:
    s = InMemoryStorage()
    report = import_text(s, "\n".join([_call("Write a short greeting.", "Hello!")] * 3),
                         name="calls.jsonl")
    assert len(report.runs_created) == 3 and report.messages_stored == 2
    assert len(report.threads_created) == 1
    said = [(n.where, n.reason) for n in report.skipped]
    assert said == [("line 2", NOTE), ("line 3", NOTE)]
    first, *later = report.runs_created
    for line, rid in enumerate(later, start=2):
        record = s.runs.get(f"{rid}:import")
        assert isinstance(record, dict) and record["notes"] == [f"line {line}: {NOTE}"]
    record = s.runs.get(f"{first}:import")
    assert isinstance(record, dict) and record["notes"] == []


def test_a_call_repeated_and_answered_otherwise_is_a_branch_without_a_note() -> None:
    s = InMemoryStorage()
    report = import_text(s, "\n".join([_call("Write a short greeting.", "Hello!"),
                                       _call("Write a short greeting.", "Hi there!")]),
                         name="calls.jsonl")
    assert len(report.threads_created) == 2 and report.messages_stored == 4
    assert not [n for n in report.skipped if "same messages" in n.reason]


def _failed(question: str, stream: bool = False) -> str:
    return json.dumps({"request": {"model": "m", "stream": stream, "messages": [
        {"role": "user", "content": question}]}, "error": {"code": "invalid_image_format"}})


def test_a_call_failing_again_alike_is_stored_once_and_said() -> None:
    # paper-qa's cassette: four requests alike, each refused with a 400
    s = InMemoryStorage()
    report = import_text(s, "\n".join([_failed("Describe the image."),
                                       _failed("Describe the image.", stream=True)]),
                         name="calls.jsonl")
    assert len(report.runs_created) == 2 and report.messages_stored == 1
    assert [(n.where, n.reason) for n in report.skipped] == [(
        "line 2", "the same messages (no answer recorded) as line 1: stored once, and both "
                  "runs refer to them")]


def test_a_failed_call_after_an_answer_it_repeats_is_said_too() -> None:
    s = InMemoryStorage()
    report = import_text(s, "\n".join([_call("Write a short greeting.", "Hello!"),
                                       _failed("Write a short greeting.")]),
                         name="calls.jsonl")
    assert report.messages_stored == 2
    assert [(n.where, n.reason) for n in report.skipped] == [(
        "line 2", "the same messages (no answer recorded) as line 1: stored once, and both "
                  "runs refer to them")]


def test_a_failed_call_joins_the_conversation_of_its_retry() -> None:
    """A failed call (an expired signature, a 5xx) sent again and answered: placed by its
    messages alone it joined the first conversation sharing them — another model's, in
    another file (an outside trial: a Mistral call's failure in a Claude thread) — and
    its retry, answered otherwise, sat alone in a thread. It joins its retry's thread,
    said; a call failed hours before the same messages are answered is no retry."""
    def line(model: str, at: int, answer: str | None) -> str:
        record: dict[str, object] = {"request": {"model": model, "messages": [
            {"role": "user", "content": "Say this is a test"}]}}
        if answer is None:
            record.update(error={"message": "Signature expired"}, started_at=at)
        else:
            record["response"] = {"created": at, "model": model, "choices": [
                {"message": {"role": "assistant", "content": answer}}]}
        return json.dumps(record)
    t = 1_750_000_000
    claude = line("claude-x", t - 10_000_000, "This is a test.")
    for files in ([claude, "\n".join([line("mistral-y", t, None),
                                       line("mistral-y", t + 1, "Sure: a test!")])],
                  ["\n".join([claude, line("mistral-y", t, None),
                              line("mistral-y", t + 1, "Sure: a test!")])]):
        s = InMemoryStorage()
        reports = [import_text(s, text, name=f"f{i}.jsonl") for i, text in enumerate(files)]
        runs = {r.agent + ":" + r.status: r.thread_id for r in s.runs.list_runs()}
        assert runs["mistral-y:failed"] == runs["mistral-y:completed"] \
            != runs["claude-x:completed"]
        notes = [n.reason for n in reports[-1].skipped]
        where = "line 2" if len(files) == 1 else "line 1"
        assert notes == [f"failed; line {int(where[-1]) + 1} sent the same messages again "
                         "and was answered (a retry): both runs are of its thread"]
        # the runs are in the file's order still
        assert [s.runs.require_run(r).status for r in reports[-1].runs_created][-2:] == [
            "failed", "completed"]
    # hours apart: the failed call stays where its messages put it, as before
    s = InMemoryStorage()
    report = import_text(s, "\n".join([claude, line("mistral-y", t, None),
                                       line("mistral-y", t + 7_200, "Sure: a test!")]))
    first, failed, answered = (s.runs.require_run(r) for r in report.runs_created)
    assert failed.thread_id == first.thread_id != answered.thread_id
    assert not [n for n in report.skipped if "a retry" in n.reason]


def test_the_same_messages_answered_by_another_model_are_no_retry() -> None:
    """An eval sends one prompt to each of its providers: a failed call to one and the
    next provider's answer to the same messages are two calls, not a call and its retry
    (promptfoo's export: a rate-limited gpt-5-mini, then gpt-5)."""
    def line(model: str, answer: str | None) -> str:
        record: dict[str, object] = {"request": {"model": model, "messages": [
            {"role": "user", "content": "Solve this riddle"}]}, "started_at": 1_750_000_000}
        if answer is None:
            record["error"] = {"message": "Rate limit reached"}
        else:
            record["response"] = {"created": 1_750_000_001, "model": model, "choices": [
                {"message": {"role": "assistant", "content": answer}}]}
        return json.dumps(record)
    s = InMemoryStorage()
    report = import_text(s, "\n".join([line("gpt-5-mini", None), line("gpt-5", "An echo.")]),
                         name="calls.jsonl")
    assert not [n for n in report.skipped if "a retry" in n.reason]
    assert [s.runs.require_run(r).status for r in report.runs_created] == [
        "failed", "completed"]

def test_each_run_of_a_repeated_call_was_answered_by_the_stored_answer() -> None:
    """The later run's answer is the message the first stored: `why` calls it that
    run's answer too, not one that "comes later in the conversation" (magentic's
    seeded cassette), and so does the answer's lifeline."""
    from memory_core.analysis.forgotten import lifeline, why_forgotten

    s = InMemoryStorage()
    report = import_text(s, "\n".join([_call("Say hello!", "Hello! How can I help?")] * 2),
                         name="calls.jsonl")
    first, second = report.runs_created
    (tid,) = report.threads_created
    for rid in (first, second):
        e = why_forgotten(s, rid, (tid, 1))
        assert e.fate == "written-after" and not e.reached_model, (rid, e.sentence)
        assert why_forgotten(s, rid, "How can I help").fate == "written-after"
    e = why_forgotten(s, second, (tid, 1))
    assert f"the same as run {first}'s and stored once" in e.sentence
    assert e.evidence["stored_by"] == first
    assert [p.fate for p in lifeline(s, tid, 1)] == ["written-after", "written-after"]


def test_an_answer_a_later_import_stored_first_is_the_run_s_answer_too() -> None:
    """A later request imported first stores the conversation with no run of its own
    for the earlier answer: `why` said it was "the same as run None's"."""
    from memory_core.analysis.forgotten import why_forgotten

    ask, answer, more = ("Say hello!", "Hello! How can I help?", "Thanks.")
    later = json.dumps({"request": {"model": "m", "messages": [
        {"role": "user", "content": ask}, {"role": "assistant", "content": answer},
        {"role": "user", "content": more}]}, "response": {"choices": [
            {"message": {"role": "assistant", "content": "You are welcome."}}]}})
    s = InMemoryStorage()
    import_text(s, later, name="later.jsonl")
    first = import_text(s, _call(ask, answer), name="first.jsonl")
    (tid,) = first.threads_extended
    e = why_forgotten(s, first.runs_created[0], (tid, 1))
    assert e.fate == "written-after", e.sentence
    assert "run None" not in e.sentence and "stored_by" not in e.evidence
    assert "stored once, as a later request of the conversation sent it back" in e.sentence
