"""LongMemEval's evidence sessions pooled into long multi-session threads.

The committed copy (``longmemeval_oracle.json.gz``, made by ``build.py``) holds every
question's evidence sessions with LongMemEval's turn labels (``has_answer``). Each
LongMemEval question comes with its own haystack; here the questions are dealt into
``THREADS`` threads (sorted by question id, question i to thread i mod THREADS) and a
thread holds the sessions of all its questions in date order, so every question is
asked over one long conversation in which the other questions' sessions are the
distractors. A question's evidence is the ``has_answer`` turns of its own sessions,
as positions (0-based, the stored ``seq``) in its thread. Abstention questions
(``_abs``) are left out, as LongMemEval's own retrieval metric does.
"""

from __future__ import annotations

import gzip
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.recall_quality.longmemeval.build import OUT

THREADS = 16
_DATE = "%Y/%m/%d (%a) %H:%M"


def read(path: Path = OUT) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))
    return data


def scorable(questions: list[dict[str, Any]], sessions: dict[str, Any],
             ) -> list[dict[str, Any]]:
    """The non-abstention questions with at least one labelled turn."""
    return [q for q in questions if not q["question_id"].endswith("_abs")
            and any(t.get("has_answer") for sid in q["session_ids"]
                    for t in sessions[sid]["turns"])]


def _thread(tid: str, questions: list[dict[str, Any]],
            sessions: dict[str, Any]) -> dict[str, Any]:
    """One thread: its questions' sessions ordered by (earliest date given, id)."""
    first: dict[str, datetime] = {}
    for q in questions:
        for sid, date in zip(q["session_ids"], q["session_dates"], strict=True):
            when = datetime.strptime(date, _DATE)
            first[sid] = min(first.get(sid, when), when)
    order = sorted(first, key=lambda sid: (first[sid], sid))
    turns: list[dict[str, Any]] = []
    start: dict[str, int] = {}
    for sid in order:
        start[sid] = len(turns)
        turns += [{"role": t["role"], "text": t["content"], "session": sid}
                  for t in sessions[sid]["turns"]]
    out = []
    for q in questions:
        evidence = sorted(start[sid] + i for sid in q["session_ids"]
                          for i, t in enumerate(sessions[sid]["turns"]) if t.get("has_answer"))
        out.append({"id": q["question_id"], "question": q["question"],
                    "kind": q["question_type"], "evidence": evidence})
    return {"id": tid, "turns": turns, "questions": out}


def conversations(data: dict[str, Any] | None = None, threads: int = THREADS,
                  ) -> list[dict[str, Any]]:
    """The threads, in the shape ``longconv.run.Prepared`` takes (``id``, ``turns``
    with ``role``/``text``, ``questions`` with ``question``/``evidence``/``kind``)."""
    data = read() if data is None else data
    sessions = data["sessions"]
    chosen = sorted(scorable(data["questions"], sessions), key=lambda q: q["question_id"])
    return [_thread(f"lme-{k:02d}", chosen[k::threads], sessions)
            for k in range(threads) if chosen[k::threads]]
