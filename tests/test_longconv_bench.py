"""The long-conversation recall benchmark: its committed data is what the generator
makes, large enough, and every label points at a turn that holds the fact."""

from __future__ import annotations

import json

from bench.recall_quality.longconv.generate import OUT, generate


def test_committed_data_is_the_generators_output_and_well_labelled() -> None:
    data = generate()
    assert json.loads(OUT.read_text(encoding="utf-8")) == json.loads(json.dumps(data))
    convs = data["conversations"]
    questions = [(c, q) for c in convs for q in c["questions"]]
    assert len(questions) >= 500 and len(convs) >= 10
    for c, q in questions:
        turns = c["turns"]
        assert q["evidence"] and all(turns[i]["role"] == "user" for i in q["evidence"])
        # the evidence is stated sessions before the end, not in the recent window
        assert all(i < len(turns) - 6 for i in q["evidence"])
    kinds = {q["kind"] for _, q in questions}
    assert kinds == {"single", "updated", "before-update", "probe"}
    assert sum(q["pre_asked"] for _, q in questions) > 100
