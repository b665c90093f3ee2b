"""How a message and a run's answer read on every page: text parts as text, tool calls
as ``→ name(args)``, results as ``name → result`` (the workbench's one reading)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memory_core.journal import OutputRecord, RunStep
from memory_core.provenance.record import (
    LANES,
)
from memory_core.types import (
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

# messages a Threads page shows (a page of the 5,000-run bench thread settled in ~2.2 s
# in Chromium at 20, in 3.1-4.1 s at 50)
DEFAULT_PAGE_SIZE = 20
MAX_RANGE_PAGES = 10  # a page extended to a linked range shows at most this many pages
VIEW_LANES: tuple[str, ...] = (*LANES, "dropped")



# -- message rendering ------------------------------------------------------------------
def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def tool_call_text(part: ToolCallPart) -> str:
    return f"→ {part.name}({_json_text(part.args)})"


def tool_result_text(part: ToolResultPart) -> str:
    return f"{part.name} → {_json_text(part.result)}"


def render_text(message: Message) -> str:
    """The whole message as plain text, one part per line: text as is, a call as
    ``→ name(args)``, a result as ``name → result`` (never clipped, never HTML)."""
    lines: list[str] = []
    for p in message.parts:
        if isinstance(p, TextPart):
            lines.append(p.text)
        elif isinstance(p, ToolCallPart):
            lines.append(tool_call_text(p))
        else:
            lines.append(tool_result_text(p))
    return "\n".join(lines)


def run_answer(steps: Sequence[RunStep], output: OutputRecord | None) -> str | None:
    """A finished run's answer as every page shows it: its last model step's message,
    one part a line — the text, then each tool call it answered with as ``→ name(args)``
    (an imported request answered with a call, a run stopped at max steps), so an answer
    that is a call is never shown as none; the output's text when no step is recorded.
    None when the run recorded no output."""
    if output is None:
        return None
    return render_text(steps[-1].response.as_message()) if steps else output.text
