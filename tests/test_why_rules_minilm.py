"""Issue 36's demo, on the real embedding model: support-3-forgot's refund was under the
recall threshold *and* beyond top-k (sixth where three are kept). Its fate names both
rules, the settings they name let it in when the run is composed again, either alone
does not; Compare and ``memwb why`` say both."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core.analysis.diff import diff_runs
from memory_core.analysis.forgotten import explain_message, why_forgotten
from memory_core.analysis.whatif import what_if
from memory_core.journal import load_run
from memory_core.storage.base import Storage
from memory_core.storage.duckdb import DuckDBStorage
from tests.test_cli import memwb, ok

pytestmark = pytest.mark.model
RUN = "support-3-forgot"
REFUND_FACT = "The refund of €240 for order A-1042 was approved"


@pytest.fixture(scope="module")
def demo(minilm_demo_db: Path) -> Iterator[Storage]:
    storage = DuckDBStorage(str(minilm_demo_db), read_only=True)
    yield storage
    storage.close()


def _refund(s: Storage) -> tuple[str, int]:
    m = next(m for m in s.memory.get_messages("support-1")
             if (m.text() or "").startswith(REFUND_FACT))
    return m.thread_id, m.seq


def _lets_in(s: Storage, changes: dict[str, object], ref: tuple[str, int]) -> bool:
    run = what_if(s, changes, run_ids=[RUN]).runs[0]
    return ref in {(k.thread_id, k.seq) for c in run.lanes if c.lane == "recalled"
                   for k in c.entered}


def test_the_refund_was_under_the_bar_and_beyond_top_k(demo: Storage) -> None:
    ref = _refund(demo)
    e = why_forgotten(demo, RUN, ref)
    assert e.fate == "below-threshold"  # the first rule, as before
    assert [(r.rule, r.setting, r.value, r.needed) for r in e.rules] == [
        ("below-threshold", "recall.threshold", 0.45, 0.434),
        ("beyond-top-k", "recall.top_k", 3, 6)]
    assert e.let_in == "a threshold of 0.434 or lower and a top-k of 6 or more"
    # by phrase, the same fate
    assert why_forgotten(demo, RUN, "refund of €240").rules == e.rules
    # from the record alone (the story page), the same rules
    msg = demo.memory.get_messages(ref[0], seqs=[ref[1]])[0]
    assert explain_message(demo, load_run(demo, RUN), msg, rescore=False).rules == e.rules
    needed = {r.setting: r.needed for r in e.rules}
    assert _lets_in(demo, needed, ref)
    assert not _lets_in(demo, {"recall.threshold": 0.434}, ref)
    assert not _lets_in(demo, {"recall.top_k": 6}, ref)
    assert not _lets_in(demo, {"recall.threshold": 0.434, "recall.top_k": 5}, ref)


def test_compare_and_the_cli_name_both(demo: Storage, minilm_demo_db: Path) -> None:
    ref = _refund(demo)
    d = diff_runs(demo, RUN, "support-3-fixed")
    e = next(x for x in d.entries if (x.thread_id, x.seq) == ref)
    assert e.kept_out_by == ["below-threshold", "beyond-top-k"]
    assert e.reason == ("recall threshold 0.450 → 0.400 and recall top_k 3 → 8 let it in: in "
                        "run A it was below the threshold (0.434 < 0.450) and beyond top-k "
                        "(rank 6, top-k 3)")
    out = ok(memwb("why", RUN, "--db", str(minilm_demo_db), "--text", "refund of €240"))
    assert (f"  let in by: a threshold of 0.434 or lower and a top-k of 6 or more (try: memwb "
            f"whatif --run {RUN} --set recall.threshold=0.434 --set recall.top_k=6)"
            ) in out.splitlines()
