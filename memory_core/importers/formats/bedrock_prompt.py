"""A plain-prompt Bedrock model's InvokeModel call recorded without its URL, told by
its answer (Llama's ``generation``, Titan's ``results``, Mistral's ``outputs``) or
Titan's request: read as ``bedrock_invoke`` reads it from a URL."""

from __future__ import annotations

from memory_core.importers.bedrock_invoke import is_invoke_prompt_record
from memory_core.importers.formats import RecordFormat
from memory_core.importers.formats.bedrock_invoke import invoke_exchanges

FORMAT = RecordFormat("bedrock-prompt", 70,
                      lambda r: r.api is None and is_invoke_prompt_record(r.obj),
                      lambda r: invoke_exchanges(r, "prompt"))
