"""Amazon Bedrock's InvokeModel (``POST /model/{modelId}/invoke`` and
``/invoke-with-response-stream``): the request and the answer are the model's own
body, so which reader reads a call is told by that body (and the model the URL names).

- Claude: the Messages API's body (``anthropic_version``, ``messages``): read as one
  (``anthropic.py``);
- Amazon Nova: ``messages``/``system`` of Converse's blocks, ``inferenceConfig``,
  ``toolConfig`` → ``output.message``, ``stopReason``, ``usage``, its stream Converse's
  events each a chunk of its own: read as a Converse call (``bedrock.py``);
- other ``messages`` (AI21 Jamba, Mistral Large, OpenAI's gpt-oss): chat completions';
- Cohere Command R: ``message``, ``chat_history``, ``tools``, ``tool_results``: Cohere's
  v1 Chat body (``cohere.py``);
- a plain prompt — Meta Llama (``prompt``, ``max_gen_len`` → ``generation``,
  ``prompt_token_count``, ``generation_token_count``, ``stop_reason``), Mistral
  (``prompt`` → ``outputs[{text, stop_reason}]``), Amazon Titan text (``inputText``,
  ``textGenerationConfig`` → ``results[{outputText, tokenCount, completionReason}]``,
  ``inputTextTokenCount``), Cohere Command (→ ``generations``), AI21 Jurassic-2
  (→ ``completions``), an imported model answering as a legacy completion
  (``choices[{text}]``): read as the legacy completion it is equivalent to, the prompt
  one user message (``invoke_completion``); a stream's chunks are joined, its last
  chunk's ``amazon-bedrock-invocationMetrics`` the usage;
- any other body (an embedding model's, an image model's, …) is not read: a cassette
  skips it naming the model and the keys sent (``own_format``)."""

from __future__ import annotations

import re
from typing import Any, Literal

from memory_core.importers.bedrock import guardrail_note, is_converse_record
from memory_core.importers.common import fail, list_of, object_of

Family = Literal["claude", "claude-text", "nova", "prompt", "chat", "cohere"]
# a model id's provider and model name, in a bare id (``meta.llama3-…``), an inference
# profile's (``us.meta.llama3-…``) or an ARN's last part (an imported or provisioned
# model's names none: ``…:endpoint/my-endpoint``)
_VENDOR = re.compile(r"(?:^|/)(?:(?:us|us-gov|eu|apac|jp|au|ca|global)\.)?([a-z0-9-]+)\."
                     r"([\w.:-]+)$")
# providers whose text models take a plain prompt
_PROMPT_VENDORS = ("meta", "mistral", "cohere", "ai21", "deepseek")
# each model's parameter names as the legacy completions API's
_PARAM_NAMES = {"max_gen_len": "max_tokens", "maxTokens": "max_tokens",
                "maxTokenCount": "max_tokens", "topP": "top_p", "p": "top_p", "k": "top_k",
                "topK": "top_k", "stopSequences": "stop", "stop_sequences": "stop",
                "max_tokens_to_sample": "max_tokens"}
_METRICS = "amazon-bedrock-invocationMetrics"


def invoke_family(body: dict[str, Any], model: str | None) -> Family | None:
    """Which reader reads an InvokeModel body sent to ``model``; None: none does."""
    if isinstance(body.get("messages"), list):
        if "anthropic_version" in body:
            return "claude"
        # (AI21 Jamba's, Mistral Large's, gpt-oss's bodies are chat completions')
        return "nova" if is_converse_record({"request": body}) else "chat"
    found = _VENDOR.search(model or "")
    vendor, name = found.groups() if found else (None, "")
    if isinstance(body.get("message"), str) and vendor in (None, "cohere"):
        return "cohere"  # Command R's: Cohere's v1 Chat body
    if isinstance(body.get("inputText"), str):
        # (Titan's embedding models take an ``inputText`` too, and no generation config)
        titan_text = vendor == "amazon" and name.startswith(("titan-text", "titan-tg1"))
        return "prompt" if titan_text or (
            vendor is None and "textGenerationConfig" in body) else None
    if isinstance(body.get("prompt"), str) and (vendor == "anthropic" or (
            vendor is None and "\n\nHuman:" in body["prompt"])):
        return "claude-text"  # Claude 2's Text Completions body: a dialogue
    if isinstance(body.get("prompt"), str) and (vendor is None or vendor in _PROMPT_VENDORS):
        return "prompt"  # (no provider named: an imported or provisioned model's ARN)
    return None


def own_format(model: str | None, body: dict[str, Any]) -> str:
    """Why an InvokeModel call is not read: the model and the keys it was sent."""
    return (f"a Bedrock InvokeModel call to {model or '?'} in that model's own format "
            f"(keys: {', '.join(sorted(map(str, body))) or 'none'}): only Claude's "
            "Messages and Text Completions bodies, Nova's messages, chat messages, Cohere's "
            "chat, plain-prompt "
            "models (Llama, Mistral, Titan text, Cohere Command, AI21) and the Converse API "
            "are read")


def _count(value: Any, where: str, name: str) -> int | None:
    """A token count (Titan's stream writes them as floats: 28.0)."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise fail(where, f"'{name}' must be a token count, got {value!r}")
    return value


def _first(chunk: dict[str, Any], key: str, where: str, notes: list[str]) -> dict[str, Any]:
    items = list_of(chunk.get(key), where, key)
    if not items:
        raise fail(where, f"'{key}' is empty: the answer has no text")
    if len(items) > 1:
        notes.append(f"{where}: {len(items)} {key}: only the first imported")
    return object_of(items[0], where, f"{key}[0]")


def _piece(chunk: Any, where: str, notes: list[str]
           ) -> tuple[Any, Any, int | None, int | None]:
    """One answer (or stream chunk) of a plain-prompt model: its text, finish reason,
    prompt and completion token counts (None where it gives none)."""
    if not isinstance(chunk, dict):
        raise fail(where, f"an InvokeModel answer must be an object, got {chunk!r}"[:300])
    if "generation" in chunk:  # Meta Llama
        return (chunk["generation"], chunk.get("stop_reason"),
                _count(chunk.get("prompt_token_count"), where, "prompt_token_count"),
                _count(chunk.get("generation_token_count"), where, "generation_token_count"))
    if "outputText" in chunk:  # a Titan stream's chunk
        return (chunk["outputText"], chunk.get("completionReason"),
                _count(chunk.get("inputTextTokenCount"), where, "inputTextTokenCount"),
                _count(chunk.get("totalOutputTextTokenCount"), where,
                       "totalOutputTextTokenCount"))
    if "results" in chunk:  # Titan
        first = _first(chunk, "results", where, notes)
        return (first.get("outputText"), first.get("completionReason"),
                _count(chunk.get("inputTextTokenCount"), where, "inputTextTokenCount"),
                _count(first.get("tokenCount"), where, "tokenCount"))
    if "outputs" in chunk:  # Mistral
        first = _first(chunk, "outputs", where, notes)
        return first.get("text"), first.get("stop_reason"), None, None
    if "completion" in chunk:  # Claude 2's Text Completions (a stream's chunk alike)
        return chunk["completion"], chunk.get("stop_reason"), None, None
    if "generations" in chunk:  # Cohere Command
        first = _first(chunk, "generations", where, notes)
        return first.get("text"), first.get("finish_reason"), None, None
    if "is_finished" in chunk:  # a Cohere Command stream's chunk: a piece of generation
        if chunk.get("index", 0) != 0:  # (num_generations > 1: the first is the answer)
            if not any(n.endswith(_OTHER_GENERATIONS) for n in notes):
                notes.append(f"{where}: {_OTHER_GENERATIONS}")
            return "", None, None, None
        return chunk.get("text", ""), chunk.get("finish_reason"), None, None
    if "completions" in chunk:  # AI21 Jurassic-2: the tokens it read and wrote listed
        first = _first(chunk, "completions", where, notes)
        data = object_of(first.get("data"), where, "completions[0].data")
        prompt = object_of(chunk.get("prompt"), where, "prompt")
        return (data.get("text"), object_of(first.get("finishReason"), where,
                                            "finishReason").get("reason"),
                len(list_of(prompt.get("tokens"), where, "prompt.tokens")) or None,
                len(list_of(data.get("tokens"), where, "data.tokens")) or None)
    if "choices" in chunk:  # an imported model answering as a legacy completion
        first = _first(chunk, "choices", where, notes)
        usage = object_of(chunk.get("usage"), where, "usage")
        return (first.get("text"), first.get("finish_reason"),
                _count(usage.get("prompt_tokens"), where, "usage.prompt_tokens"),
                _count(usage.get("completion_tokens"), where, "usage.completion_tokens"))
    raise fail(where, "an InvokeModel answer of no shape this importer reads (keys: "
                      f"{', '.join(sorted(map(str, chunk))) or 'none'}; expected generation, "
                      "outputs, results, outputText, generations, is_finished (a Cohere "
                      "stream), completion, completions or choices)")


_OTHER_GENERATIONS = ("the stream's other generations (index > 0) not imported (its usage counts "
                      "their tokens too)")


def _answer(response: Any, model: str | None, where: str, notes: list[str]
            ) -> dict[str, Any]:
    """A plain-prompt model's answer (or its stream's chunks, joined) as a legacy
    completion response."""
    chunks = response if isinstance(response, list) else [response]
    if not chunks:
        raise fail(where, "the recorded stream holds no chunk")
    texts: list[str] = []
    finish: Any = None
    prompt_tokens = completion_tokens = None
    for n, chunk in enumerate(chunks):
        cw = where if len(chunks) == 1 else f"{where}: stream chunk {n}"
        text, reason, read, wrote = _piece(chunk, cw, notes)
        if not isinstance(text, str):
            raise fail(cw, f"the answer's text must be a string, got {text!r}"[:300])
        texts.append(text)
        finish = reason if reason is not None else finish
        prompt_tokens = read if read is not None else prompt_tokens
        completion_tokens = wrote if wrote is not None else completion_tokens
    last = chunks[-1]
    metrics = object_of(last.get(_METRICS), where, _METRICS)
    for name in ("inputTokenCount", "outputTokenCount"):  # (a stream's whole counts)
        counted = _count(metrics.get(name), where, name)
        if counted is not None and name == "inputTokenCount":
            prompt_tokens = counted
        elif counted is not None:
            completion_tokens = counted
    out: dict[str, Any] = {"choices": [{"index": 0, "text": "".join(texts),
                                        "finish_reason": finish}]}
    if model:
        out["model"] = model
    if "created" in last:  # (an imported model's legacy completion dates itself)
        out["created"] = last["created"]
    if prompt_tokens is not None and completion_tokens is not None:
        out["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
    if len(chunks) > 1:
        notes.append(f"{where}: response joined from {len(chunks)} stream chunk(s)")
    return out


def invoke_completion(obj: dict[str, Any], model: str | None, where: str,
                      notes: list[str]) -> dict[str, Any]:
    """A plain-prompt InvokeModel record as the legacy completions record it is
    equivalent to: the prompt (Titan's ``inputText``), the model's parameters under
    the completions API's names (Titan's in ``textGenerationConfig``), the answer."""
    request = object_of(obj.get("request"), where, "request")
    body = {k: v for k, v in request.items() if k not in ("inputText",
                                                          "textGenerationConfig")}
    if "inputText" in request:
        body["prompt"] = request["inputText"]
        body.update(object_of(request.get("textGenerationConfig"), where,
                              "textGenerationConfig"))
    params = {_PARAM_NAMES.get(str(k), str(k)): v for k, v in body.items()}
    if model and "model" not in params:
        params["model"] = model
    out = {k: v for k, v in obj.items() if k not in ("request", "response")}
    out["request"] = params
    response = obj.get("response")
    if response is not None:
        guardrail_note(response, where, notes)
        out["response"] = _answer(response, model, where, notes)
    return out


def is_invoke_prompt_record(obj: dict[str, Any]) -> bool:
    """A record without a URL whose answer only a plain-prompt Bedrock model gives
    (Llama's ``generation`` with ``prompt_token_count``, Titan's ``results`` of
    ``outputText``, Mistral's ``outputs`` of ``text`` and ``stop_reason``), or whose
    request is Titan's (``inputText`` with ``textGenerationConfig``)."""
    request, response = obj.get("request", obj), obj.get("response")
    if isinstance(request, dict) and isinstance(request.get("inputText"), str) \
            and "textGenerationConfig" in request:
        return True
    first = response[0] if isinstance(response, list) and response else response
    if not isinstance(first, dict):
        return False
    items = first.get("results") or first.get("outputs")
    item = items[0] if isinstance(items, list) and items else None
    return ("generation" in first and "prompt_token_count" in first) or (
        isinstance(item, dict) and ("outputText" in item or (
            "text" in item and "stop_reason" in item)))
