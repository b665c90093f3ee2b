"""What the recording of an imported run held that the import did not keep — thinking,
search results, citations, a server tool's results, an attachment's bytes — and the end
of a ``why`` sentence saying a phrase may have been in it (who wrote it: the model, a
server tool, the client)."""

from __future__ import annotations

import re

from memory_core.analysis.parts import excerpt, normalise
from memory_core.journal import ImportRecord, RunData, RunReader
from memory_core.storage.base import Storage


def not_imported(data: RunData) -> list[str]:
    """What the import of an imported run noted it left out of the recording (its
    import record's notes saying "not imported": thinking, search results, citations,
    alternative choices …; and the attachments kept as placeholders, whose content is
    not kept); none for a run this library ran."""
    return _left_out(data.import_record)


def _left_out(record: ImportRecord | None) -> list[str]:
    return [n for n in (record.notes if record is not None else [])
            if "not imported" in n or _PLACEHOLDER.search(n)]


_PLACEHOLDER = re.compile(r"\bkept as (?:a )?placeholders?\b")


#: the other runs of a conversation whose import records a phrase search reads at most
OTHER_RUNS_READ = 200


def others_not_imported(storage: Storage, data: RunData) -> list[str]:
    """``not_imported`` of the other imported runs of an imported run's conversation
    (the nearest ``OTHER_RUNS_READ``), each note after its run's id: a thought a model
    wrote in an earlier answer, never stored, is where a phrase searched in vain was.
    None for a run this library ran."""
    m = data.memctx
    if m is None or not m.imported or data.run.thread_id is None:
        return []
    runs = [r for r in storage.runs.list_runs(thread_id=data.run.thread_id)
            if r.run_id != data.run.run_id]
    runs.sort(key=lambda r: abs((r.started_at - data.run.started_at).total_seconds()))
    out = []
    for r in sorted(runs[:OTHER_RUNS_READ], key=lambda r: (r.started_at, r.run_id)):
        out += [f"run {r.run_id}: {n}"
                for n in _left_out(RunReader(storage.runs, r.run_id).import_record())]
    return out


_QUOTED = re.compile(r"https?://[^\s,)]+|'[^']*'|\"[^\"]*\"")


def unread(left_out: list[str], others: bool, needle: str) -> str:
    """The end of a sentence saying nothing holds a phrase, for a run whose recording
    (or, ``others``, another run's of its conversation) held parts the import left
    out: they may have — or one does, when its note names the phrase (a cited URL)."""
    whose = "the recordings of this conversation's runs" if others \
        else "the recording of this run"
    said = normalise(needle)
    # what a note quotes of the recording (a cited URL, a value in quotes), not the
    # note's own words ("a thought … not imported" holds no thought)
    holding = next((n for n in left_out
                    if any(said in normalise(q) for q in _QUOTED.findall(n))), None)
    if holding is not None:
        return (f" But {whose} held parts that were not imported, and one of them holds it "
                f"(“{excerpt(holding, said)}”): it was recorded but not kept here.")
    first = _clipped(left_out[0])
    more = f" and {len(left_out) - 1} more" if len(left_out) > 1 else ""
    if not others and all(_of_answer(n) for n in left_out):
        ran = [n for n in left_out if _SERVER_RESULT.search(n)]
        if ran:  # (a tool the provider's server ran inside the call: input, not output)
            return (f" But the answer recorded for this run held parts that were not "
                    f"imported, among them a result of a tool the provider's server ran "
                    f"during this call (“{_clipped(ran[0])}”): it may have been in one, "
                    "given to the model while it answered, recorded but not kept here.")
        # (the model's own reasoning, citations …: written after it was sent the request)
        return (f" But the answer recorded for this run held parts that were not imported "
                f"(“{first}”{more}): it may have been in one of them, written by the model "
                "after it was sent this request, not given to it.")
    return (f" But {whose} held parts that were not imported (“{first}”"
            f"{more}): it may have been in one of them, recorded but not kept here.")


def _clipped(note: str) -> str:
    """A note quoted in a sentence: its first 120 characters."""
    return note if len(note) <= 120 else note[:119] + "…"


def _of_answer(note: str) -> bool:
    """Whether an import note speaks of the recorded answer ("interaction 3: response:
    its reasoning … not imported"; "file: messages[2]: response: …")."""
    return _ANSWER_NOTE.search(note) is not None


_ANSWER_NOTE = re.compile(r": response\b(?!_)")
# what a server ran inside the call and gave the model (Claude's web search, MCP, code
# execution results; the Responses API's calls that carry their own results)
_SERVER_RESULT = re.compile(r"\b[a-z_]*tool_result\b|\b(?:mcp|code_interpreter|file_search|"
                            r"web_search)_call\b")
