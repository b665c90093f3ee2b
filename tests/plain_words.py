"""What a plain-view page (every demo story with the engineer details off, the start
page's story cards) must never show: the engineer's codes and setting keys, field syntax
and ids. The codes come from the code itself (the fates analysis names, the statuses of
the score chart, the reasons the stories explain, every settings field), not a hand list
only. Shared by tests/app/test_story.py (AppTest) and tests/browser/test_story_walk.py
(Chromium)."""

from __future__ import annotations

import re
from dataclasses import fields, is_dataclass
from typing import get_args

from app.stories import PLAIN_LEFT_OUT
from memory_core.analysis.fates import Fate
from memory_core.analysis.run_view import ScoreCandidate
from memory_core.composition.observational import ObservationalConfig
from memory_core.composition.working_memory import WorkingMemoryConfig
from memory_core.provenance.record import CompositionSettings
from memory_core.recall.config import RecallConfig
from memory_core.storage.base import Storage


def _field_names(cls: type) -> set[str]:
    if is_dataclass(cls):
        return {f.name for f in fields(cls)}
    return set(getattr(cls, "model_fields", {}))


SETTING_KEYS: frozenset[str] = frozenset(set().union(*map(_field_names, (
    RecallConfig, CompositionSettings, ObservationalConfig, WorkingMemoryConfig))))
# codes: a hyphen or an underscore in them (single-word fates such as "recalled" are
# English words, caught only as key syntax below)
_status = ScoreCandidate.model_fields["status"].annotation
CODES: frozenset[str] = frozenset(
    c for c in {*get_args(Fate), *get_args(_status), *PLAIN_LEFT_OUT,
                "token-limiter", "seq", *SETTING_KEYS}
    if "-" in c or "_" in c or c == "seq")


def _spellings(code: str) -> set[str]:
    return {code, code.replace("_", "-"), code.replace("-", "_")}


_CODE = re.compile(r"(?<![\w-])(" + "|".join(sorted(
    {re.escape(s) for c in CODES for s in _spellings(c)}, key=len, reverse=True))
    + r")(?![\w-])", re.IGNORECASE)
# `key: value` / `key=value` of a setting key or any snake_case name; JSON; a message
# reference (`thread #seq`, `#12`)
_KEY_SYNTAX = re.compile(r"(?<![\w-])(" + "|".join(sorted(SETTING_KEYS, key=len,
                                                          reverse=True))
                         + r"|[a-z][a-z0-9]*(?:_[a-z0-9]+)+)\s*[:=]\s*\S")
_RAW = re.compile(r'\{"|#\d')
_ICON = re.compile(r":material/\w+:")  # an icon's markup (shown as the icon)


def code_words(text: str, ids: frozenset[str] = frozenset()) -> list[str]:
    """The engineer codes, setting keys, field syntax and ids ``text`` shows (empty when
    it is plain)."""
    text = _ICON.sub(" ", text)
    found = [m.group(0) for rx in (_CODE, _KEY_SYNTAX, _RAW) for m in rx.finditer(text)]
    return found + [i for i in ids if re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", text)]


def database_ids(storage: Storage) -> frozenset[str]:
    """The run and thread ids of a database (a plain page names neither)."""
    return frozenset({r.run_id for r in storage.runs.list_runs()}
                     | {t.id for t in storage.memory.list_threads()})
