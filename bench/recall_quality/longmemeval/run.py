"""Recall quality on real multi-session chats: LongMemEval's evidence sessions pooled
into 16 long threads (``data.py``), 470 questions with turn-level evidence labels.

Each question is asked over its thread through the real recall path
(``longconv.run.Prepared``: an in-memory store, ``RecallEngine``, the last
``WINDOW`` turns as the recent window), top-20; hit@k = share of questions with an
evidence turn among the first k hits, for plain cosine, BM25, the hybrid default and
variants of it. MiniLM embeddings are cached on disk (``longconv.run.CACHE``,
git-ignored): the first run embeds ~9,700 texts (~11 minutes on 2 busy cores).

Run: ``.venv/bin/python -m bench.recall_quality.longmemeval.run`` (``--write``
replaces the "Recall quality: LongMemEval threads" section of bench/RESULTS.md).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench.recall_quality.longconv.run import (
    KS,
    TUNED_FIELDS,
    WINDOW,
    Prepared,
    Subsets,
    base,
    evaluate,
    minilm,
)
from bench.recall_quality.longmemeval.data import THREADS, conversations
from bench.results import replace_section
from memory_core.recall import RecallConfig

TITLE = "Recall quality: LongMemEval threads"
KINDS = {"single-session-user": "user fact", "single-session-assistant": "assistant fact",
         "single-session-preference": "preference", "multi-session": "multi-session",
         "knowledge-update": "knowledge update", "temporal-reasoning": "temporal"}


def _of_kind(kind: str) -> Callable[[dict[str, Any]], bool]:
    return lambda q: bool(q["kind"] == kind)


SUBSETS: Subsets = {"all": lambda q: True,
                    "even threads": lambda q: q["half"] == "even",
                    "odd threads": lambda q: q["half"] == "odd",
                    **{label: _of_kind(kind) for kind, label in KINDS.items()}}


def outside_window(convs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The threads with only the questions that have evidence before the recent
    window (a question answered only inside the window needs no recall), each marked
    with its thread's half (even or odd position), and how many were dropped."""
    kept, dropped = [], 0
    for n, c in enumerate(convs):
        cut = len(c["turns"]) - WINDOW
        half = "odd" if n % 2 else "even"
        qs = [{**q, "half": half} for q in c["questions"] if any(i < cut for i in q["evidence"])]
        dropped += len(c["questions"]) - len(qs)
        kept.append({**c, "questions": qs})
    return kept, dropped


def configs() -> dict[str, RecallConfig]:
    default = RecallConfig()
    tuned: dict[str, Any] = {k: getattr(default, k) for k in TUNED_FIELDS}
    out = {"vector (plain cosine)": base("vector"), "lexical (BM25)": base("lexical"),
           "hybrid default": base("hybrid", **tuned)}
    for w in (0.5, 0.6, 0.7, 0.8):
        for cw in (0.0, 0.5):
            if (w, cw) != (tuned["vector_weight"], tuned["context_weight"]):
                out[f"hybrid, vector_weight {w}, context_weight {cw}"] = base(
                    "hybrid", **{**tuned, "vector_weight": w, "context_weight": cw})
    for cw in (0.0, 0.5):
        out[f"hybrid, rank fusion (RRF k=60), context_weight {cw}"] = base(
            "hybrid", **{**tuned, "fusion": "rrf", "context_weight": cw})
    return out


def render(results: dict[str, dict[str, dict[int, float]]], convs: Sequence[dict[str, Any]], dropped: int) -> str:
    n_q = sum(len(c["questions"]) for c in convs)
    n_t = sum(len(c["turns"]) for c in convs)
    counts = {label: sum(1 for c in convs for q in c["questions"] if q["kind"] == kind)
              for kind, label in KINDS.items()}
    default = RecallConfig()
    lines = [
        f"LongMemEval (Wu et al., ICLR 2025; MIT): its 470 non-abstention questions with "
        f"turn-level evidence (`has_answer`), their evidence sessions (real user–assistant "
        f"chats) pooled into {len(convs)} threads ({n_t:,} turns, "
        f"{min(len(c['turns']) for c in convs)}–{max(len(c['turns']) for c in convs)} "
        f"each): question i (by id) goes to thread i mod {THREADS}, a thread holds its "
        "questions' sessions in date order, so the other questions' sessions are the "
        "distractors (`bench/recall_quality/longmemeval/`: copy, loader, README with "
        "origin and rule). Embedder: all-MiniLM-L6-v2 (real model). Each question is "
        f"asked over its whole thread, the last {WINDOW} turns being the recent window "
        f"({dropped} question(s) whose evidence lies only there not scored: {n_q} "
        f"scored); top-{max(KS)}, hit@k = share of questions with an evidence turn "
        f"among the first k hits. Questions per kind: "
        + ", ".join(f"{k} {n}" for k, n in counts.items()) + ".",
        "",
        "Rerun: `.venv/bin/python -m bench.recall_quality.longmemeval.run --write` "
        "(the first run embeds ~9,700 texts, cached on disk for later runs)",
        "",
        "| recall | hit@5 | hit@20 | hit@5 even threads | hit@5 odd threads | "
        + " | ".join(f"hit@5 {label}" for label in KINDS.values()) + " |",
        "|---|" + "---:|" * (4 + len(KINDS)),
    ]
    for name, r in results.items():
        lines.append(f"| {name} | {r['all'][5]:.3f} | {r['all'][20]:.3f} | "
                     f"{r['even threads'][5]:.3f} | {r['odd threads'][5]:.3f} | "
                     + " | ".join(f"{r[label][5]:.3f}" for label in KINDS.values()) + " |")
    lines += ["", "Default setting of `mode=\"hybrid\"` when run (every field is a "
              "`RecallConfig` field, recorded with the run): "
              f"`{ {k: getattr(default, k) for k in TUNED_FIELDS} }`."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = ap.parse_args(argv)
    convs, dropped = outside_window(conversations())
    embed = minilm()
    t = time.perf_counter()
    prepared = [Prepared(c, embed) for c in convs]
    print(f"stored and embedded in {time.perf_counter() - t:.1f}s", flush=True)
    results = evaluate(prepared, configs(), SUBSETS)
    text = render(results, convs, dropped)
    print(text)
    if args.write:
        replace_section(TITLE, text)


if __name__ == "__main__":
    main()
