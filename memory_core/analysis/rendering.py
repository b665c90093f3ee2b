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


def render_text(message: Message, *, attachments: bool = True) -> str:
    """The whole message as plain text, one part per line: text as is, a call as
    ``→ name(args)``, a result as ``name → result``, an attachment kept as a
    placeholder as ``[type: media type, … bytes]`` where it stood among them
    (``attachments``; never clipped, never HTML)."""
    lines: list[str] = []
    for p in message.parts:
        if isinstance(p, TextPart):
            lines.append(p.text)
        elif isinstance(p, ToolCallPart):
            lines.append(tool_call_text(p))
        else:
            lines.append(tool_result_text(p))
    held = message.metadata.get("attachments") if attachments else None
    placed = [a for a in held if isinstance(a, dict)] if isinstance(held, list) else []
    end = len(lines)  # (an index is the attachment's place in the content sent)
    for at, att in sorted(((a["index"] if type(a.get("index")) is int and a["index"] >= 0
                            else end, a) for a in placed), key=lambda x: x[0]):
        lines.insert(min(at, len(lines)), attachment_label(att))
    return "\n".join(lines)


def attachment_label(att: dict[str, Any]) -> str:
    """An attachment placeholder as a message's text shows it: its type, media type,
    name or where it is, and size (``attachment_text`` has all it keeps)."""
    said = [str(att[k]) for k in ("media_type", "mime_type", "format", "filename", "url",
                                  "file_id") if isinstance(att.get(k), str)]
    if type(att.get("bytes")) is int:
        said.append(f"{att['bytes']:,} bytes")
    kind = str(att.get("type", "attachment"))
    return f"[{kind}: {', '.join(said)}]" if said else f"[{kind}]"


def attachment_text(att: dict[str, Any]) -> str:
    """An attachment placeholder (``metadata["attachments"]``) as text: its type and
    what identifies it, as the model client names one it could not send."""
    kind = str(att.get("type", "attachment"))
    described = ", ".join(f"{k} {v}" for k, v in sorted(att.items())
                          if k not in ("type", "index"))
    return f"[{kind}: {described}]" if described else f"[{kind}]"


def run_answer(steps: Sequence[RunStep], output: OutputRecord | None) -> str | None:
    """A finished run's answer as every page shows it: its last model step's message,
    one part a line — the text, then each tool call it answered with as ``→ name(args)``
    (an imported request answered with a call, a run stopped at max steps), so an answer
    that is a call is never shown as none; the output's text when no step is recorded.
    None when the run recorded no output."""
    if output is None:
        return None
    return render_text(steps[-1].response.as_message()) if steps else output.text
