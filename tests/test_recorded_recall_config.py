"""The recorded composition settings are the RecallConfig itself (memctx v2): analysis
rebuilds a hybrid run's recall exactly, non-default ``rrf_k`` and ``near_misses``
included, so why-forgotten and diff explain its misses as the run itself saw them."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core.analysis.diff import diff_runs
from memory_core.analysis.forgotten import why_forgotten
from memory_core.composition.memory import AgentMemory
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.journal import load_run
from memory_core.journal.records import load_record
from memory_core.models.reader import ReaderModel
from memory_core.provenance.record import MEMCTX_VERSION, Memctx
from memory_core.recall.config import LEGACY_HYBRID, RecallConfig
from memory_core.runs.registry import recall_config_from_settings
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.types import Message
from tests.helpers import Tick

# With the hashing embedder and this query, seq 6 ranks 3rd when rrf_k=0 (beyond the
# top 2) but 2nd with the default rrf_k=60: re-scoring with defaults mis-explains it.
HISTORY = ["what was it about then", "so what was it about the zebra", "zebra loan",
           "zebra loan approved for the zoo", "lunch on friday with the team",
           "football scores from the weekend", "it was about the loan"]
QUESTION = "what was it about the zebra loan"
TARGET = ("h", 6)
BASE: dict[str, Any] = {"mode": "hybrid", "fusion": "rrf", "top_k": 2, "threshold": 0.5,
                        "skip_query_duplicates": False,
                        "filter": {"kind": "history"}}  # the runs' own turns stay out


@pytest.fixture
def runs() -> InMemoryStorage:
    clock = Tick()
    storage = InMemoryStorage(clock=clock)
    embed = HashingEmbedder(64)
    AgentMemory(storage, embed=embed).append(
        "h", [Message(role="user", content=t, metadata={"kind": "history"}) for t in HISTORY])
    agent = Agent(name="a", instructions="Answer from memory.", model=ReaderModel(embed=embed))
    for run_id, extra in (("default", {}), ("fused", {"rrf_k": 0, "near_misses": 3}),
                          ("quiet", {"rrf_k": 0, "near_misses": 0})):
        memory = AgentMemory(storage, embed=embed, recent_n=0,
                             recall=RecallConfig(**BASE, **extra), clock=clock)
        Runner(storage, {"a": agent}, memory=memory, clock=clock).run(
            "a", run_id=run_id, thread_id="h", prompt=QUESTION)
    return storage


def upgrade_memctx(raw: object, key: str) -> Memctx:
    return load_record("memctx", Memctx, raw, key)


def test_the_record_holds_every_recall_setting_and_rebuilds_it(runs: InMemoryStorage) -> None:
    memctx = load_run(runs, "fused").memctx
    assert memctx is not None and memctx.v == MEMCTX_VERSION == 2
    assert recall_config_from_settings(memctx.settings) == RecallConfig(
        **BASE, rrf_k=0, near_misses=3)
    assert [n.reason for n in memctx.near_misses if (n.thread_id, n.seq) == TARGET] == [
        "beyond-top-k"]


def test_why_forgotten_explains_a_beyond_top_k_miss_as_the_run_ranked_it(
        runs: InMemoryStorage) -> None:
    e = why_forgotten(runs, "fused", TARGET)
    assert e.fate == "beyond-top-k" and e.evidence["rank"] == 3 and e.evidence["top_k"] == 2
    # the same message in the default run: recalled, so the difference is rrf_k alone
    assert why_forgotten(runs, "default", TARGET).fate == "recalled"


def test_diff_explains_the_push_out_with_the_recorded_rrf_k(runs: InMemoryStorage) -> None:
    # "quiet" records no near misses, so diff must re-score with the run's own settings
    d = diff_runs(runs, "default", "quiet")
    entry = next(e for e in d.entries if (e.thread_id, e.seq) == TARGET)
    assert entry.reason == "pushed out by a new hit: rank 2 → 3 (top 2)"
    assert d.settings_changed["rrf_k"] == (60, 0) and d.settings_changed["near_misses"] == (5, 0)


def test_a_v1_record_upgrades_with_the_unrecorded_fields_named() -> None:
    v1 = {"v": 1, "thread_id": "t", "settings": {
        "recent_n": 4, "recall_enabled": True, "top_k": 2, "threshold": 0.3,
        "scope": "resource", "filter": None, "message_range": {"before": 1, "after": 0},
        "mode": "hybrid", "embedder": "hashing-64"}}
    m = upgrade_memctx(v1, "r:memctx")
    # recorded fields as recorded; what v1 recall did not have yet, as it then behaved
    assert m.v == 2 and m.settings.recall == RecallConfig(
        top_k=2, threshold=0.3, scope="resource", message_range={"before": 1, "after": 0},
        mode="hybrid", **LEGACY_HYBRID)
    assert m.unknown_fields == ["settings.recall.near_misses", "settings.recall.rrf_k"]
    off = upgrade_memctx({"v": 1, "thread_id": "t",
                          "settings": {"recent_n": 4, "recall_enabled": False}}, "r:memctx")
    assert off.settings.recall is None and off.unknown_fields == []
    assert recall_config_from_settings(off.settings) == RecallConfig()
    v0 = upgrade_memctx({"threadId": "t", "recentCount": 2, "recalled": [
        {"threadId": "t", "seq": 0, "role": "user", "preview": "x"}]}, "r:memctx")
    assert v0.settings.recall is None and v0.unknown_fields == ["settings.recall"]
