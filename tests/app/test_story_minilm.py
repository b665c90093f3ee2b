"""The support story's engineer details on the real demo (all-MiniLM-L6-v2, as `make
demo` builds it), where recall's first match — the refund tool call — was dropped: the
score chart starts at that rank 1, and the why line names both rules that kept the
refund decision out."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app import services
from app.components import STORY_PAGE
from tests.app.conftest import ENTRY, TIMEOUT

pytestmark = pytest.mark.model


def test_the_engineer_chart_starts_at_the_dropped_first_match(
        minilm_demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "demo.duckdb"
    shutil.copyfile(minilm_demo_db, db)
    monkeypatch.setenv(services.ENV_VAR, str(db))
    at = AppTest.from_file(str(ENTRY), default_timeout=TIMEOUT)
    at.run()
    at.switch_page(STORY_PAGE)
    at.query_params.update({"story": "support"})
    at.run()
    at.toggle(key="story-engineer").set_value(True).run()
    assert not at.exception and not at.error
    (chart,) = [spec for el in at.get("plotly_chart") if (spec := json.loads(el.proto.spec))
                ["layout"].get("xaxis", {}).get("title", {}).get("text") == "rank"]
    ranks = chart["layout"]["xaxis"]["ticktext"]
    assert ranks[:3] == ["1", "2", "3"], ranks
    first = next(t for t in chart["data"] if t["x"][0] == 1)
    assert first["name"] == "dropped"
    captions = [str(c.value).replace("\\", "") for c in at.caption]
    assert any(c.startswith("why_forgotten(support-3-forgot, support-1 #")
               and "below-threshold + beyond-top-k — " in c for c in captions), captions
    # what the fix let in, each with its rank and score — to 3 decimals, as every score
    let_in = [c for c in captions
              if re.fullmatch(r"`?support-1`? #\d+ · rank \d+ in run `support-3-fixed` · "
                              r"score .*", c)]
    assert let_in and all(re.search(r"score \d\.\d{3}$", c) for c in let_in), let_in
