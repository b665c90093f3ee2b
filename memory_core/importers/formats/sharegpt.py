"""ShareGPT conversations (``{"id", "conversations": [{"from", "value"}, ...]}``, as
fine-tuning datasets keep them): one exchange per assistant turn, each with the turns
before it as its request; they group into one thread, keyed by ``id``."""

from __future__ import annotations

from typing import Any

from memory_core.importers.common import Exchange, fail, split_instructions
from memory_core.importers.formats import RecordFormat
from memory_core.importers.formats.fields import str_field
from memory_core.importers.jsonvalues import load_json
from memory_core.importers.openai_shapes import sharegpt_messages
from memory_core.models.openai_codec import from_openai_tools


def sharegpt_exchanges(obj: dict[str, Any], where: str, index: int) -> list[Exchange]:
    """A ShareGPT conversation: one exchange per assistant turn, each with the turns
    before it as its request (they group into one thread by shared history)."""
    notes: list[str] = []
    messages = sharegpt_messages(obj["conversations"], where, notes)
    key = str_field(where, obj, "id")
    tools = from_openai_tools(_tools_field(obj.get("tools"), where), where, notes)
    out: list[Exchange] = []
    for i, m in enumerate(messages):
        if m.role != "assistant" or i == 0:
            continue
        instructions, history = split_instructions(messages[:i])
        if not history:
            continue
        out.append(Exchange(where=f"{where} turn {i}", index=index + len(out),
                            instructions=instructions, history=history, response=m,
                            thread_key=key, tools=tools, params_known=False,
                            notes=notes if not out else []))
    if not out:
        raise fail(where, "ShareGPT conversation has no assistant ('gpt') turn after a "
                          "user turn")
    return out


def _tools_field(raw: Any, where: str) -> Any:
    # ShareGPT-style datasets often store tools as a JSON string
    return load_json(raw, where, "tools") if isinstance(raw, str) else raw


FORMAT = RecordFormat("sharegpt", 10,
                      lambda r: isinstance(r.obj.get("conversations"), list),
                      lambda r: sharegpt_exchanges(r.obj, r.where, r.index))
