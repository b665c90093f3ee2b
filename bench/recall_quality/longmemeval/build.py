"""Make the committed copy ``longmemeval_oracle.json.gz`` from LongMemEval's oracle
file (or a directory of its per-question files, one entry each): every evidence
session once, its turns as published (``role``, ``content``, ``has_answer`` when
true), and per question the ids and dates of its sessions. Nothing is relabelled: the loader
(``data.py``) derives the evidence turns from ``has_answer``.

Run: ``python -m bench.recall_quality.longmemeval.build PATH`` (PATH: the official
``longmemeval_oracle.json``, or the directory of per-question files named in
README.md).
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
OUT = HERE / "longmemeval_oracle.json.gz"
QUESTION_FIELDS = ("question_id", "question_type", "question", "answer", "question_date")


def entries(path: Path) -> list[dict[str, Any]]:
    """The LongMemEval entries in ``path``: a JSON list, or a directory of one-entry files."""
    if path.is_dir():
        return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(path.glob("*.json"))]
    data: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return data


def compact(items: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Session bodies once (a session shared by questions must have the same turns in
    each; its date may differ, so dates stay with the questions), and the questions
    sorted by id."""
    sessions: dict[str, dict[str, Any]] = {}
    questions = []
    for e in items:
        ids, dates, bodies = (e["haystack_session_ids"], e["haystack_dates"],
                              e["haystack_sessions"])
        if not len(ids) == len(dates) == len(bodies):
            raise ValueError(f"{e['question_id']}: session ids, dates and bodies differ in length")
        for sid, body in zip(ids, bodies, strict=True):
            turns = [{"role": t["role"], "content": t["content"],
                      **({"has_answer": True} if t.get("has_answer") else {})} for t in body]
            if sessions.setdefault(sid, {"turns": turns})["turns"] != turns:
                raise ValueError(f"session {sid!r} differs between questions")
        questions.append({**{k: e[k] for k in QUESTION_FIELDS}, "session_ids": list(ids),
                          "session_dates": list(dates)})
    questions.sort(key=lambda q: q["question_id"])
    return {"sessions": dict(sorted(sessions.items())), "questions": questions}


def write(data: dict[str, Any], out: Path = OUT) -> None:
    raw = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    # mtime=0: the same input gives the same bytes
    out.write_bytes(gzip.compress(raw, compresslevel=9, mtime=0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("path", type=Path)
    write(compact(entries(ap.parse_args().path)))


if __name__ == "__main__":
    main()
