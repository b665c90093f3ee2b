"""OpenAIChatModel: a client for any OpenAI-compatible ``/chat/completions`` endpoint
(Ollama, vLLM, LM Studio, OpenAI) with tools, using only the standard library.

Configuration comes from arguments or the environment: ``MEMWB_OPENAI_BASE_URL``
(default Ollama's ``http://127.0.0.1:11434/v1``), ``MEMWB_OPENAI_MODEL``,
``MEMWB_OPENAI_API_KEY`` (or ``OPENAI_API_KEY``) and ``MEMWB_OPENAI_TIMEOUT`` (seconds).
Every failure — timeout, refused connection, HTTP error, malformed JSON or response —
raises :class:`memory_core.errors.ModelError` naming the URL.
"""

from __future__ import annotations

import hashlib
import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

from memory_core.errors import InvalidInputError, ModelError
from memory_core.models.base import ModelResponse, ToolSpec, Usage
from memory_core.openai_codec import to_openai_messages, to_openai_tools
from memory_core.types import Message, ToolCallPart

__all__ = ["OpenAIChatModel", "to_openai_messages", "to_openai_tools"]

DEFAULT_BASE_URL = "http://127.0.0.1:11434/v1"
DEFAULT_TIMEOUT = 30.0
ENV_BASE_URL = "MEMWB_OPENAI_BASE_URL"
ENV_MODEL = "MEMWB_OPENAI_MODEL"
ENV_API_KEY = "MEMWB_OPENAI_API_KEY"
ENV_TIMEOUT = "MEMWB_OPENAI_TIMEOUT"
_EXCERPT = 300


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "…"


class OpenAIChatModel:
    """Chat completions with tools against an OpenAI-compatible server."""

    def __init__(self, base_url: str | None = None, model: str | None = None,
                 api_key: str | None = None, timeout: float | None = None,
                 temperature: float | None = None, seed: int | None = None, *,
                 environ: Mapping[str, str] | None = None) -> None:
        # what is not passed comes from ``environ`` (default os.environ), and only there
        env = os.environ if environ is None else environ
        base = base_url or env.get(ENV_BASE_URL) or DEFAULT_BASE_URL
        if not base.startswith(("http://", "https://")):
            raise InvalidInputError(
                f"base URL {base!r} must start with http:// or https:// (set {ENV_BASE_URL})")
        self.base_url = base.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        chosen = model or env.get(ENV_MODEL)
        if not chosen:
            raise InvalidInputError(
                f"no model name given: pass model=... or set {ENV_MODEL} "
                f"(e.g. {ENV_MODEL}=llama3.1 for Ollama)")
        self.model = chosen
        self.name = chosen
        self._api_key = api_key or env.get(ENV_API_KEY) or env.get("OPENAI_API_KEY")
        if timeout is None:
            raw = env.get(ENV_TIMEOUT)
            try:
                timeout = float(raw) if raw else DEFAULT_TIMEOUT
            except ValueError:
                raise InvalidInputError(
                    f"{ENV_TIMEOUT}={raw!r} is not a number of seconds") from None
        if not timeout > 0:
            raise InvalidInputError(f"timeout must be > 0 seconds, got {timeout!r}")
        self.timeout = float(timeout)
        self.temperature = temperature
        self.seed = seed

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OpenAIChatModel:
        """Build from ``MEMWB_OPENAI_*`` variables (``environ`` defaults to os.environ)."""
        return cls(environ=environ)

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIChatModel(url={self.url!r}, model={self.model!r})"

    # -- the Model protocol ---------------------------------------------------------
    def request_body(self, messages: Sequence[Message],
                     tools: Sequence[ToolSpec]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": to_openai_messages(messages),
                                "stream": False}
        if tools:
            body["tools"] = to_openai_tools(tools)
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.seed is not None:
            body["seed"] = self.seed
        return body

    def complete(self, messages: Sequence[Message],
                 tools: Sequence[ToolSpec]) -> ModelResponse:
        payload = json.dumps(self.request_body(messages, tools), ensure_ascii=False)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        req = urllib.request.Request(self.url, data=payload.encode("utf-8"), headers=headers,
                                     method="POST")
        raw = self._send(req)
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as e:
            raise ModelError(f"malformed JSON from {self.url} ({e.msg} at char {e.pos}): "
                             f"{_excerpt(raw)!r}") from None
        return self.parse_response(data)

    def _send(self, req: urllib.request.Request) -> str:
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return str(resp.read().decode("utf-8", errors="replace"))
        except urllib.error.HTTPError as e:
            try:
                body = e.read().decode("utf-8", errors="replace")
            except OSError:
                body = ""
            raise ModelError(f"HTTP {e.code} from {self.url}: {_excerpt(body) or e.reason}") \
                from None
        except urllib.error.URLError as e:
            reason = e.reason
            if isinstance(reason, TimeoutError):
                raise ModelError(f"timed out after {self.timeout:g}s waiting for {self.url}") \
                    from None
            if isinstance(reason, ConnectionRefusedError):
                raise ModelError(f"connection refused by {self.url}: is the server running? "
                                 f"(set {ENV_BASE_URL})") from None
            raise ModelError(f"could not reach {self.url}: {reason}") from None
        except TimeoutError:
            raise ModelError(f"timed out after {self.timeout:g}s waiting for {self.url}") \
                from None
        except (ConnectionError, OSError) as e:
            raise ModelError(f"connection to {self.url} failed: {e}") from None

    def parse_response(self, data: Any) -> ModelResponse:
        """A chat-completions JSON body as a ModelResponse."""
        try:
            choice = data["choices"][0]
            msg = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise ModelError(f"unexpected response from {self.url}: no choices[0].message "
                             f"in {_excerpt(json.dumps(data, ensure_ascii=False))!r}") from None
        content = msg.get("content")
        if isinstance(content, list):  # some servers send content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if content is not None and not isinstance(content, str):
            raise ModelError(f"unexpected content type {type(content).__name__} from {self.url}")
        calls: list[ToolCallPart] = []
        for i, tc in enumerate(msg.get("tool_calls") or []):
            fn = (tc.get("function") or {}) if isinstance(tc, dict) else {}
            if not isinstance(fn, dict):
                raise ModelError(f"tool call {i} from {self.url} is malformed: {fn!r}")
            name = fn.get("name")
            if not name:
                raise ModelError(f"tool call {i} from {self.url} has no function name")
            args_raw = fn.get("arguments")
            if isinstance(args_raw, dict):  # Ollama's native shape
                args: Any = args_raw
            elif args_raw is None or (isinstance(args_raw, str) and not args_raw.strip()):
                args = {}
            elif isinstance(args_raw, str):
                try:
                    args = json.loads(args_raw)
                except ValueError:
                    raise ModelError(f"malformed JSON arguments for tool {name!r} from "
                                     f"{self.url}: {_excerpt(args_raw)!r}") from None
            else:
                raise ModelError(f"arguments for tool {name!r} from {self.url} are a "
                                 f"{type(args_raw).__name__}, expected a JSON string")
            if not isinstance(args, dict):
                raise ModelError(f"arguments for tool {name!r} from {self.url} are not a "
                                 f"JSON object: {_excerpt(json.dumps(args))!r}")
            call_id = tc.get("id") if isinstance(tc, dict) else None
            if not call_id:  # some servers omit ids; derive a stable one
                digest = hashlib.sha1(f"{i}:{name}:{json.dumps(args, sort_keys=True)}"
                                      .encode()).hexdigest()[:12]
                call_id = f"call-{digest}"
            calls.append(ToolCallPart(id=str(call_id), name=str(name), args=args))
        usage = data.get("usage") or {}
        return ModelResponse(
            text=content if content else None,
            tool_calls=calls,
            usage=Usage(input_tokens=int(usage.get("prompt_tokens") or 0),
                        output_tokens=int(usage.get("completion_tokens") or 0)),
            model=str(data.get("model") or self.model),
            finish_reason=choice.get("finish_reason"))
