"""memwb why lists every rule that kept a message out, and the what-if it prints lets
the message in; memwb counterfactual says which model gave each answer and what the
verdict compared (the demo database, hashing embedder, as the workbench tests build it)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core.storage.duckdb import DuckDBStorage
from sample_data.scenarios.move import MOVE
from sample_data.scenarios.support import SUPPORT
from tests.helpers import build_demo_file, copy_run_with_model
from tests.test_cli import memwb, ok

RUN = "support-3-forgot"
IMPORTED = {"kind": "imported", "name": "gpt-4o-mini-2024-07-18", "temperature": 0.0}


@pytest.fixture(scope="module")
def support_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield build_demo_file(str(tmp_path_factory.mktemp("fates") / "demo.duckdb"),
                          [SUPPORT, MOVE])


def test_why_lists_both_rules_and_the_what_if_that_lets_it_in(support_db: str) -> None:
    # support-1#4 ("I paid 240 euros"): under the bar, and fourth where three are kept
    out = ok(memwb("why", RUN, "--db", support_db, "--thread", "support-1", "--seq", "4"))
    lines = out.splitlines()
    # the first line names both rules, as the lines under it
    assert lines[0].startswith("below-threshold + beyond-top-k (support-1:4): The assistant "
                               "never saw")
    assert lines[1:5] == [
        "  kept out by (in the order composition applied them):",
        "    1. below-threshold: below the threshold (0.263 < 0.450); let in by a threshold "
        "of 0.263 or lower",
        "    2. beyond-top-k: beyond top-k (rank 4, top-k 3); let in by a top-k of 4 or more",
        f"  let in by: a threshold of 0.263 or lower and a top-k of 4 or more (try: memwb "
        f"whatif --run {RUN} --set recall.threshold=0.263 --set recall.top_k=4)"]
    assert "  threshold: 0.45" in lines and "  rank: 4" in lines
    # the command it prints, run: the message enters the recalled lane
    tried = shlex.split(re.search(r"\(try: memwb (.*)\)$", lines[4])[1])  # type: ignore[index]
    report = json.loads(ok(memwb(*tried, "--db", support_db, "--json")))
    (run,) = report["runs"]
    recalled = next(c for c in run["lanes"] if c["lane"] == "recalled")
    assert {"thread_id": "support-1", "seq": 4} in [
        {k: m[k] for k in ("thread_id", "seq")} for m in recalled["entered"]]


def test_why_says_when_no_setting_lets_it_in(support_db: str) -> None:
    # the legacy refund call in support-2's own window: its result was never stored
    out = ok(memwb("why", "support-2-t05", "--db", support_db, "--seq", "8"))
    lines = out.splitlines()
    assert lines[0].startswith("dropped (support-2:8): It was among the most recent messages")
    assert lines[0].endswith("No setting would have let it in.")
    assert lines[1:3] == ["  kept out by (in the order composition applied them):",
                          "    1. dropped: it is a tool call whose result was never stored, "
                          "and a call without its result would make the model provider "
                          "reject the whole prompt; no setting lets it past"]
    assert not any(ln.startswith("  let in by") for ln in lines)


def test_why_names_the_token_budget_that_keeps_a_trimmed_message(support_db: str) -> None:
    run = "move-gate-small-budget"
    out = ok(memwb("why", run, "--db", support_db, "--seq", "16"))
    lines = out.splitlines()
    assert lines[0].startswith("trimmed-by-token-limit (new-flat:16): ")
    budget = int(re.search(r"a token budget of (\d+) or more", lines[0])[1])  # type: ignore[index]
    assert lines[2:4] == [
        f"    1. trimmed-by-token-limit: the token limiter removed it (budget 160 tokens); "
        f"let in by a token budget of {budget} or more",
        f"  let in by: a token budget of {budget} or more (try: memwb whatif --run {run} "
        f"--set token_budget={budget})"]
    for b, kept in ((budget, True), (budget - 1, False)):
        report = json.loads(ok(memwb("whatif", "--run", run, "--set", f"token_budget={b}",
                                     "--db", support_db, "--json")))
        recent = next(c for c in report["runs"][0]["lanes"] if c["lane"] == "recent")
        assert ({"thread_id": "new-flat", "seq": 16} in [
            {k: m[k] for k in ("thread_id", "seq")} for m in recent["entered"]]) is kept


def test_counterfactual_names_the_model_of_each_answer(support_db: str,
                                                       tmp_path: Path) -> None:
    db = str(tmp_path / "copy.duckdb")
    shutil.copy(support_db, db)
    storage = DuckDBStorage(db)
    try:
        copy = copy_run_with_model(storage, "support-3-fixed", "fixed-by-gpt", IMPORTED)
    finally:
        storage.close()
    # the recorded model re-asked: every answer is its own, the original counts
    out = ok(memwb("counterfactual", "support-3-fixed", "--db", db, "--subtract", "all"))
    lines = dict(ln.split(":", 1) for ln in out.splitlines())
    assert lines["models"].strip() == "every answer by offline-reader (the run's recorded model)"
    assert lines["judged"].strip().startswith("new against the original (similarity to the "
                                              "original ")
    # another model than the recorded one: judged against its own baseline only
    out = ok(memwb("counterfactual", copy, "--db", db, "--subtract", "all",
                   "--model", "reader"))
    said = out.splitlines()
    lines = dict(ln.split(":", 1) for ln in said)
    assert lines["models"].strip() == ("original by gpt-4o-mini-2024-07-18 (the run's "
                                       "recorded model); baseline and new by offline-reader "
                                       "(re-asked)")
    assert sum(ln.startswith("baseline: ") for ln in said) == 1
    assert lines["judged"].strip().startswith(
        "new against the baseline (1 re-ask(s) of the unchanged prompt) only: the original "
        "came from another model, and answers of two models are not compared (similarity "
        "to the baseline ")
    assert said[-1].startswith("verdict:  ")


def test_why_prints_the_what_if_that_lifts_a_recall_filter(tmp_path: Path) -> None:
    """A message a recall filter kept out: "let in by: no recall filter" printed no
    what-if to try (a trial), and recall.filter=off was refused. The what-if it prints
    now lifts the filter, and run, the message enters the recalled lane."""
    from sample_data.scenarios.home import HOME

    db = build_demo_file(str(tmp_path / "home.duckdb"), [HOME])
    lines = ok(memwb("why", "home-tiles", "--db", db, "--text", "tiles")).splitlines()
    said = next(ln for ln in lines if ln.startswith("  let in by: no recall filter"))
    tried = shlex.split(re.search(r"\(try: memwb (.*)\)$", said)[1])  # type: ignore[index]
    assert tried[-2:] == ["--set", "recall.filter=off"]
    report = json.loads(ok(memwb(*tried, "--db", db, "--json")))
    (run,) = report["runs"]
    recalled = next(c for c in run["lanes"] if c["lane"] == "recalled")
    assert run["status"] == "changed" and recalled["entered"]
