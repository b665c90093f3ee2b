"""The provenance record a composition produces (SPEC §6): previews, caps, near misses,
settings, and a journal round trip that reads back byte-identically."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from memory_core.composition.memory import AgentMemory
from memory_core.composition.working_memory import WorkingMemoryConfig
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.provenance.record import MEMCTX_VERSION, Memctx
from memory_core.recall.config import RecallConfig
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.text import preview, structural_preview
from memory_core.types import Message, TextPart, ToolCallPart, ToolResultPart, canonical_json

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def storage() -> InMemoryStorage:
    n = iter(range(1, 10_000))
    return InMemoryStorage(clock=lambda: T0 + timedelta(seconds=next(n)))


def user(text: str, **meta: Any) -> Message:
    return Message(role="user", content=text, metadata=meta)


# -- previews (SPEC §6.2, §6.3) -----------------------------------------------------------
def test_text_preview_collapses_whitespace_and_clips_to_120() -> None:
    m = user("  a \n\n b\t c  " + "z" * 300)
    assert preview(m) == ("a b c " + "z" * 300)[:120]


def test_structural_preview_of_calls_and_results() -> None:
    call = Message(role="assistant", content=[ToolCallPart(id="1", name="refund",
                                                           args={"id": "r-7"})])
    assert preview(call) == '→ refund({"id":"r-7"})'
    res = Message(role="tool", content=[ToolResultPart(call_id="1", name="refund",
                                                       result="approved")])
    assert preview(res) == "refund → approved"
    mixed = Message(role="assistant", content=[TextPart(text="checking"),
                                               ToolCallPart(id="2", name="", args="raw")])
    assert preview(mixed) == "checking → tool(raw)"
    long = Message(role="assistant", content=[ToolCallPart(id="3", name="f",
                                                           args={"x": "y" * 300})])
    assert len(structural_preview(long)) == 120 and not preview(long).endswith("…")


# -- the record from a composition ------------------------------------------------------------
def _memory(s: InMemoryStorage, **recall: Any) -> AgentMemory:
    return AgentMemory(s, embed=HashingEmbedder(), recent_n=2,
                       recall=RecallConfig(**recall),
                       working_memory=WorkingMemoryConfig(read_only=True))


TEXTS = ["refund order r-7 approved", "refund order r-7 pending", "refund order delayed",
         "the weather is sunny", "football tonight", "my cat likes fish", "tea or coffee"]


def test_record_fields_and_settings() -> None:
    s = storage()
    mem = _memory(s, top_k=1, threshold=0.1, scope="resource", filter={"lang": "en"},
                  message_range={"before": 1, "after": 0}, mode="vector")
    mem.append("t1", [user(t, lang="en") for t in TEXTS], "u1")
    c = mem.load_context(thread_id="t1", resource_id="u1", input=[user("refund order r-7")])
    ctx = c.memctx
    assert ctx.v == MEMCTX_VERSION == 2 and ctx.thread_id == "t1" and ctx.resource_id == "u1"
    st = ctx.settings
    # the RecallConfig itself, every field (near_misses and rrf_k included)
    assert st.recent_n == 2 and st.recall == mem.recall_config
    recorded = st.model_dump(mode="json")["recall"]
    assert set(recorded) == set(RecallConfig.model_fields)  # every field, later ones too
    assert {k: recorded[k] for k in ("top_k", "threshold", "message_range", "scope", "filter",
                                     "mode", "near_misses", "rrf_k")} == {
        "top_k": 1, "threshold": 0.1, "message_range": {"before": 1, "after": 0},
        "scope": "resource", "filter": {"lang": "en"}, "mode": "vector", "near_misses": 5,
        "rrf_k": 60}
    assert st.flat()["top_k"] == 1 and st.flat()["rrf_k"] == 60
    assert st.recall_enabled and st.embedder == "hashing-64" and st.token_counter == "chars/4"
    assert st.working_memory == "thread" and st.working_memory_read_only
    assert ctx.working_memory_chars > 0 and ctx.recall_skipped is None
    assert ctx.scope_snapshot == {"t1": 6}
    assert ctx.dropped_count == 0 and ctx.dropped == []


def test_near_misses_report_rank_score_and_reason() -> None:
    s = storage()
    mem = _memory(s, top_k=1, near_misses=10)
    mem.append("t1", [user(t) for t in TEXTS])
    c = mem.load_context(thread_id="t1", input=[user("refund order r-7 approved")])
    [hit] = [r for r in c.memctx.recalled if r.origin == "hit"]
    assert hit.seq == 0 and hit.rank == 1
    misses = c.memctx.near_misses
    beyond = [n for n in misses if n.reason == "beyond-top-k"]
    assert beyond and beyond[0].seq == 1 and beyond[0].rank == 2
    assert beyond[0].score <= hit.score  # type: ignore[operator]
    assert all(n.seq not in (0,) for n in misses)
    ranks = [n.rank for n in misses]
    assert ranks == sorted(ranks)


def test_filtered_out_near_miss_names_the_clause() -> None:
    s = storage()
    mem = _memory(s, top_k=1, filter={"lang": "tr"})
    mem.append("t1", [user(TEXTS[0], lang="en"), user(TEXTS[1], lang="tr")] +
               [user(t, lang="tr") for t in TEXTS[3:]])
    c = mem.load_context(thread_id="t1", input=[user("refund order r-7 approved")])
    assert [r.seq for r in c.memctx.recalled] == [1]
    [miss] = [n for n in c.memctx.near_misses if n.seq == 0]
    assert miss.reason == "filtered-out" and miss.rank == 1 and miss.filter_clause


def test_below_threshold_near_miss() -> None:
    s = storage()
    mem = _memory(s, top_k=3, threshold=0.99)
    mem.append("t1", [user(t) for t in TEXTS])
    c = mem.load_context(thread_id="t1", input=[user("refund order r-7 approved")])
    assert [r.seq for r in c.memctx.recalled] == [0]
    assert any(n.reason == "below-threshold" and n.seq == 1 for n in c.memctx.near_misses)


def test_record_round_trips_through_the_journal_byte_identically() -> None:
    s = storage()
    mem = _memory(s, top_k=2, message_range=1, mode="hybrid")
    mem.append("t1", [user(t) for t in TEXTS])
    c = mem.load_context(thread_id="t1", input=[user("refund order r-7")])
    record = c.memctx.model_dump(mode="json")
    assert s.runs.put_if_absent("run-1:memctx", record)
    back = Memctx.model_validate(s.runs.get("run-1:memctx"))
    assert canonical_json(back.model_dump(mode="json")) == canonical_json(record)
    hit = next(r for r in back.recalled if r.origin == "hit")
    assert hit.vector_score is not None and hit.lexical_score is not None
    assert back.settings.recall is not None and back.settings.recall.mode == "hybrid"
