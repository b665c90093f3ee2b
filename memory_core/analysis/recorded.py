"""What the recording of an imported run says of its model call — the model, the request's
parameters, the tools offered, the usage and finish reason — beside our chars/4 estimate
of its prompt and answer, as ``memwb inspect`` and the run inspector show it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memory_core.journal.reader import RunStep
from memory_core.journal.records import ImportRecord
from memory_core.models.base import Usage
from memory_core.provenance.record import Memctx
from memory_core.text import structural_text
from memory_core.tokens import estimate_tokens

UNRECORDED = "unknown (not in the recording)"
# what a usage may say within its output count (``RecordedCall.usage_detail``)
OUTPUT_DETAIL = frozenset({"reasoning", "accepted_prediction", "rejected_prediction"})


class RecordedCall(BaseModel):
    """An imported run's call as recorded. ``None`` is what the recording does not say
    (``Memctx.unknown_fields``), never a placeholder: ``model``, ``params`` (``{}``: none
    were sent), ``tools`` (the names of the tools offered; ``[]``: none were), ``usage``; a failed call recorded no answer
    (``answered`` false), so no usage or finish reason, and its tools only where the
    import kept them."""

    model_config = ConfigDict(frozen=True)
    model: str | None
    api: str | None  # "anthropic", "bedrock", …; None: the OpenAI family or spans
    # the model the request named, when another answered (an alias, a router's choice)
    requested_model: str | None = None
    # the id the request named the model that answered by (a Bedrock inference profile)
    requested_id: str | None = None
    endpoint: str | None = None  # where it was sent ("https://api.openai.com")
    # within the usage's counts: "reasoning" output tokens, "cached_input" tokens (read
    # from the prompt cache), "cache_write" ones (written to it), a predicted output's
    # "accepted_prediction" and "rejected_prediction" output tokens
    usage_detail: dict[str, int] = Field(default_factory=dict)
    params: dict[str, Any] | None  # the request's parameters, as recorded
    # how it was sent, as recorded: ``stream``, ``store``, ``previous_response_id``, …
    sent_with: dict[str, Any] = Field(default_factory=dict)
    tools: list[str] | None
    answered: bool
    usage: Usage | None
    finish_reason: str | None
    stop_sequence: str | None = None  # which of the request's stop sequences ended it
    estimated_in: int  # our estimate of the prompt's tokens (chars/4, the lanes' sum)
    estimated_out: int | None  # of the answer's; None: no answer recorded

    def said(self) -> dict[str, str]:
        """Each thing recorded as one phrase (what the CLI and the page write): the
        ``model`` (and the one asked for, when another answered, or the id it was asked
        as), ``params`` and ``sent_with`` (JSON),
        ``tools``, ``usage``, ``estimate``, ``finish``, ``endpoint``, and ``input_within``
        / ``output_within``: what the usage says within each count ("of them 1,001
        reasoning"; "" when it says nothing)."""
        api = f" ({self.api} API)" if self.api else ""
        asked = f", asked for {self.requested_model}" if self.requested_model else (
            f", asked as {self.requested_id}" if self.requested_id else "")
        if not self.answered:
            usage = "none (no answer was recorded: the run says why)"
        elif self.usage is None:
            usage = UNRECORDED
        else:
            usage = f"{self.usage.input_tokens} in / {self.usage.output_tokens} out"
            within = [said.format(self.usage_detail[k]) for k, said in (
                ("reasoning", "{} of the output reasoning"),
                ("accepted_prediction", "{} of the output from the prediction"),
                ("rejected_prediction", "{} of the output for the prediction's unused part"),
                ("cached_input", "{} of the input cached"),
                ("cache_write", "{} of the input written to the cache"))
                if k in self.usage_detail]
            usage += f" ({'; '.join(within)})" if within else ""
        counted = self.usage_detail if self.usage is not None else {}
        out_est = f" / {self.estimated_out} out" if self.estimated_out is not None else ""
        return {
            "model": f"{self.model}{api}{asked}" if self.model
            else f"unknown{api}, not in the recording{asked}",
            "params": json.dumps(self.params, ensure_ascii=False, sort_keys=True)
            if self.params else "none" if self.params is not None else UNRECORDED,
            "sent_with": json.dumps(self.sent_with, ensure_ascii=False, sort_keys=True)
            if self.sent_with else "",
            # (the tools are the request's: unknown, answered or not, when not recorded)
            "tools": ", ".join(self.tools) or "none" if self.tools is not None
            else UNRECORDED,
            "usage": usage,
            "estimate": f"{self.estimated_in} in{out_est} (chars/4)",
            "finish": (self.finish_reason or ("not recorded" if self.answered else "none"))
            + (f" ({json.dumps(self.stop_sequence, ensure_ascii=False)})"
               if self.stop_sequence is not None else ""),
            "endpoint": self.endpoint or "not in the recording",
            "input_within": "of them " + ", ".join(said.format(counted[k]) for k, said in (
                ("cached_input", "{:,} read from the cache"),
                ("cache_write", "{:,} written to the cache")) if k in counted)
            if counted.keys() & {"cached_input", "cache_write"} else "",
            "output_within": "of them " + ", ".join(said.format(counted[k]) for k, said in (
                ("reasoning", "{:,} reasoning"),
                ("accepted_prediction", "{:,} from the prediction"),
                ("rejected_prediction", "{:,} for the prediction's unused part"))
                if k in counted) if counted.keys() & OUTPUT_DETAIL else ""}

    @property
    def asked_only(self) -> bool:
        """Whether ``model`` is only the one the request asked for: a failed call whose
        response named no model (one that did is the recorded model, and the one asked
        for is beside it)."""
        return not self.answered and self.requested_model is None \
            and self.requested_id is None

    @property
    def model_label(self) -> str:
        """What ``model`` is, as ``memwb inspect`` labels it."""
        return "model asked for" if self.asked_only else "recorded model"

    def lines(self) -> list[str]:
        """The call as ``memwb inspect`` prints it, a line each."""
        said = self.said()
        return [f"{self.model_label}: {said['model']}",
                f"sent to: {said['endpoint']}",
                f"recorded parameters: {said['params']}",
                *([f"sent with: {said['sent_with']}"] if self.sent_with else []),
                f"tools offered: {said['tools']}",
                f"recorded usage: {said['usage']}; our estimate: {said['estimate']}",
                f"finish reason: {said['finish']}"]


def recorded_call(record: ImportRecord | None, memctx: Memctx | None,
                  steps: Sequence[RunStep], agent: str) -> RecordedCall | None:
    """The call an imported run recorded (None for a run that was not imported):
    from its import record, its step (the model's identity, tools offered, usage,
    finish reason) and its provenance record (what is unknown, our estimate);
    ``agent``: the run's, the recorded model's name when it has no step."""
    if record is None or memctx is None or not memctx.imported:
        return None
    step = steps[0] if steps else None
    model = None if memctx.is_unknown("model") else (
        step.model.name if step is not None else agent)
    extra = record.extra
    texts = {k: v if isinstance(v := extra.get(k), str) else None
             for k in ("api", "requested_model", "requested_id", "endpoint",
                       "stop_sequence")}
    detail, fields = extra.get("usage_detail"), extra.get("request_fields")
    params = None if memctx.is_unknown("params") else dict(record.request_params)
    where: dict[str, Any] = {
        **texts, "sent_with": dict(fields) if isinstance(fields, dict) else {},
        "usage_detail": {k: n for k, n in detail.items() if isinstance(n, int)}
        if isinstance(detail, dict) else {}}
    if step is None:  # a failed call: the tools it offered, where the import kept them
        offered = extra.get("tools_offered")
        tools = offered if isinstance(offered, list) and all(
            isinstance(t, str) for t in offered) else None
        return RecordedCall(model=model, **where,
                            params=params, tools=tools, answered=False,
                            usage=None, finish_reason=None,
                            estimated_in=memctx.tokens.total, estimated_out=None)
    resp = step.response
    return RecordedCall(
        model=model, **where, params=params,
        tools=None if memctx.is_unknown("tools") else [t.name for t in step.record.tools],
        answered=True, usage=resp.usage if step.record.usage_known else None,
        finish_reason=resp.finish_reason, estimated_in=memctx.tokens.total,
        # counted as a composed prompt's messages are (``stages.token_text``)
        estimated_out=estimate_tokens(structural_text(resp.as_message())))
