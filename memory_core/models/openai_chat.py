"""OpenAIChatModel: chat completions with tools against any OpenAI-compatible server
(OpenAI, Azure OpenAI, Ollama, vLLM, LM Studio, OpenRouter …) through the ``openai``
Python SDK, which brings base URLs, timeouts, retries with backoff on 429/5xx
(honouring ``Retry-After``), typed responses and streaming.

Configuration comes from arguments or the environment (``environ``, default
``os.environ``), and only there:

* ``MEMWB_OPENAI_BASE_URL`` — default Ollama's ``http://127.0.0.1:11434/v1``; query
  parameters (Azure's ``api-version``) are sent with every request;
* ``MEMWB_OPENAI_MODEL`` — the model name, required;
* ``MEMWB_OPENAI_API_KEY`` or else ``OPENAI_API_KEY`` — sent as a bearer token, never
  shown in messages, ``repr`` or the recorded identity;
* ``MEMWB_OPENAI_TIMEOUT`` — seconds per attempt (default 30);
* ``MEMWB_OPENAI_MAX_RETRIES`` — retries after a 429, 5xx, timeout or lost connection
  (default 2, with exponential backoff).

Every failure — an HTTP error (with the provider's own message), a timeout, a refused
connection, a body that is not a chat completion — raises one
:class:`memory_core.errors.ModelError` whose one-line message names the URL.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memory_core.errors import InvalidInputError, ModelError
from memory_core.models.base import ModelIdentity, ModelResponse, ToolSpec, Usage
from memory_core.models.openai_codec import to_openai_messages, to_openai_tools
from memory_core.models.openai_stream import ChatStream
from memory_core.types import Message, ToolCallPart

if TYPE_CHECKING:
    import openai

DEFAULT_BASE_URL = "http://127.0.0.1:11434/v1"
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 2
ENV_BASE_URL = "MEMWB_OPENAI_BASE_URL"
ENV_MODEL = "MEMWB_OPENAI_MODEL"
ENV_API_KEY = "MEMWB_OPENAI_API_KEY"
ENV_TIMEOUT = "MEMWB_OPENAI_TIMEOUT"
ENV_MAX_RETRIES = "MEMWB_OPENAI_MAX_RETRIES"
_EXCERPT = 300
# query parameters that carry credentials (Azure ``api-key``, signed URLs, tokens)
_SECRET_PARAM = re.compile(r"key|token|secret|sig|pass|auth|cred", re.IGNORECASE)


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "…"


def split_base_url(url: str) -> tuple[str, dict[str, str]]:
    """``url`` without its query string, and the query parameters it carried."""
    parts = urllib.parse.urlsplit(url)
    query = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    return urllib.parse.urlunsplit(parts._replace(path=parts.path.rstrip("/"), query="",
                                                  fragment="")), query


def public_url(url: str) -> str:
    """``url`` as it may be shown and recorded: no ``user:password@``, no query
    parameter whose name looks like a credential, no fragment, no trailing slash (a URL
    too malformed to parse: up to its query, without anything before an ``@``)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # an unclosed IPv6 bracket
        return re.sub(r"//[^/]*@", "//", re.split(r"[?#]", url, maxsplit=1)[0])
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host + (f":{port}" if port is not None else "")
    query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
             if not _SECRET_PARAM.search(k)]
    return urllib.parse.urlunsplit(parts._replace(
        netloc=netloc, path=parts.path.rstrip("/"), query=urllib.parse.urlencode(query),
        fragment=""))


def _number(name: str, value: Any, low: float, high: float | None) -> float | None:
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or not (
            low <= value and (high is None or value <= high)):
        bounds = f"in [{low:g}, {high:g}]" if high is not None else f">= {low:g}"
        raise InvalidInputError(f"{name} must be a number {bounds}, got {value!r}")
    return float(value)


def _integer(name: str, value: Any, low: int | None) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or (low is not None
                                                                  and value < low):
        bound = f" >= {low}" if low is not None else ""
        raise InvalidInputError(f"{name} must be an integer{bound}, got {value!r}")
    return value


def _from_env(env: Mapping[str, str], var: str, parse: type[float] | type[int]) -> Any:
    raw = env.get(var)
    if not raw:
        return None
    try:
        return parse(raw)
    except ValueError:
        what = "a number of seconds" if parse is float else "a whole number"
        raise InvalidInputError(f"{var}={raw!r} is not {what}") from None


class OpenAIChatModel:
    """Chat completions with tools against an OpenAI-compatible server.

    ``temperature``, ``top_p``, ``seed`` and ``max_tokens`` are sent only when given
    (otherwise the server's defaults apply, and the recorded identity says ``None``).
    With ``stream=True`` the answer is streamed and its deltas — text and tool-call
    fragments, parallel calls included — are assembled into one ModelResponse. With
    ``key_from_env=False`` the environment's API key is not sent (only ``api_key``, if
    given): for a server the user did not configure that key for."""

    def __init__(self, base_url: str | None = None, model: str | None = None,
                 api_key: str | None = None, timeout: float | None = None,
                 temperature: float | None = None, seed: int | None = None, *,
                 top_p: float | None = None, max_tokens: int | None = None,
                 max_retries: int | None = None, stream: bool = False,
                 key_from_env: bool = True,
                 environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        base = base_url or env.get(ENV_BASE_URL) or DEFAULT_BASE_URL
        # what to fix when it is wrong: the URL given, or the environment's
        self._fix = "check the base URL given" if base_url else f"set {ENV_BASE_URL}"
        try:
            host = urllib.parse.urlsplit(base).hostname
        except ValueError:  # an unclosed IPv6 bracket
            host = None
        if not base.startswith(("http://", "https://")) or not host:
            raise InvalidInputError(f"base URL {public_url(base)!r} must be an http:// or "
                                    f"https:// URL with a host ({self._fix})")
        self.base_url, self._query = split_base_url(base)
        self.public_base_url = public_url(base)
        self.url = public_url(self.base_url) + "/chat/completions"
        chosen = model or env.get(ENV_MODEL)
        if not chosen or not chosen.strip():
            raise InvalidInputError(f"no model name: set {ENV_MODEL} to the name your server "
                                    f"knows (e.g. {ENV_MODEL}=llama3.1 for Ollama)")
        self.model = self.name = chosen.strip()
        self._api_key = api_key or (env.get(ENV_API_KEY) or env.get("OPENAI_API_KEY")
                                    if key_from_env else None) or None
        t = _number("timeout", timeout, 0.0, None) if timeout is not None else \
            _from_env(env, ENV_TIMEOUT, float)
        t = DEFAULT_TIMEOUT if t is None else t
        if not t > 0:
            raise InvalidInputError(f"timeout must be > 0 seconds, got {t!r}")
        self.timeout = float(t)
        retries = max_retries if max_retries is not None else \
            _from_env(env, ENV_MAX_RETRIES, int)
        self.max_retries = _integer("max_retries", DEFAULT_MAX_RETRIES if retries is None
                                    else retries, 0) or 0
        self.temperature = _number("temperature", temperature, 0.0, 2.0)
        self.top_p = _number("top_p", top_p, 0.0, 1.0)
        self.seed = _integer("seed", seed, None)
        self.max_tokens = _integer("max_tokens", max_tokens, 1)
        self.stream = bool(stream)
        self._client: openai.OpenAI | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OpenAIChatModel:
        """Build from ``MEMWB_OPENAI_*`` variables (``environ`` defaults to os.environ)."""
        return cls(environ=environ)

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIChatModel(url={self.url!r}, model={self.model!r})"

    def identity(self) -> ModelIdentity:
        return ModelIdentity(kind="openai", name=self.model, base_url=self.public_base_url,
                             temperature=self.temperature, top_p=self.top_p, seed=self.seed,
                             max_tokens=self.max_tokens)

    # -- the request -----------------------------------------------------------------
    def request_body(self, messages: Sequence[Message],
                     tools: Sequence[ToolSpec]) -> dict[str, Any]:
        """The JSON body sent to ``/chat/completions``."""
        body: dict[str, Any] = {"model": self.model, "messages": to_openai_messages(messages),
                                "stream": self.stream}
        if self.stream:
            body["stream_options"] = {"include_usage": True}
        if tools:
            body["tools"] = to_openai_tools(tools)
        for name in ("temperature", "top_p", "seed", "max_tokens"):
            value = getattr(self, name)
            if value is not None:
                body[name] = value
        return body

    def _sdk(self) -> openai.OpenAI:
        if self._client is None:
            import openai

            self._client = openai.OpenAI(
                api_key=self._api_key or "", base_url=self.base_url, timeout=self.timeout,
                max_retries=self.max_retries, default_query=self._query or None,
                _enforce_credentials=False)
        return self._client

    # -- the Model protocol ---------------------------------------------------------
    def complete(self, messages: Sequence[Message],
                 tools: Sequence[ToolSpec]) -> ModelResponse:
        body = self.request_body(messages, tools)
        try:
            data = self._send(body)
        except ModelError:
            raise
        except Exception as e:  # noqa: BLE001 - every SDK/transport failure, one line
            raise self._error(e) from None
        return self.parse_response(data)

    def _send(self, body: dict[str, Any]) -> Any:
        from openai import Omit

        extra: dict[str, Any] = {} if self._api_key else {"Authorization": Omit()}
        raw = self._sdk().chat.completions.create(**body, extra_headers=extra)
        if self.stream:
            return self.assemble_stream(raw)
        if isinstance(raw, str):  # a body not labelled JSON: the SDK hands back the text
            try:
                return json.loads(raw)
            except ValueError:
                raise ModelError(f"malformed response from {self.url} (not JSON): "
                                 f"{self._redact(_excerpt(raw))!r}") from None
        return raw.to_dict(mode="json", warnings=False)

    def assemble_stream(self, chunks: Iterable[Any]) -> dict[str, Any]:
        """Streamed ``chat.completion.chunk`` objects (typed or plain dicts) as one
        chat-completion body, added up by ``ChatStream`` (``openai_stream.py``, the
        importer's and the proxy's too): text deltas joined, each tool call's id, name
        and argument fragments gathered by its ``index``, the last finish reason and
        usage kept."""
        chat = ChatStream()
        for chunk in chunks:
            chat.add(chunk if isinstance(chunk, dict)
                     else chunk.to_dict(mode="json", warnings=False))
        return chat.completion()

    # -- errors ----------------------------------------------------------------------
    def _redact(self, text: str) -> str:
        """``text`` without the API key or any credential the base URL carries."""
        parts = urllib.parse.urlsplit(self.base_url)
        secrets = [self._api_key, parts.password, parts.username] + [
            v for k, v in self._query.items() if _SECRET_PARAM.search(k)]
        for secret in sorted((s for s in secrets if s and len(s) >= 3), key=len,
                             reverse=True):
            text = text.replace(secret, "***")
        return text

    def _error(self, e: Exception) -> ModelError:
        """One clear line for whatever went wrong talking to the server."""
        import httpx2
        import openai

        retried = f" (after {self.max_retries} retries)" if self.max_retries else ""
        if isinstance(e, openai.APIStatusError):
            again = retried if e.status_code == 429 or e.status_code >= 500 else ""
            msg = f"HTTP {e.status_code} from {self.url}{again}: {_provider_message(e)}"
        elif isinstance(e, openai.APITimeoutError | httpx2.TimeoutException) or \
                _caused_by(e, TimeoutError):
            msg = f"timed out after {self.timeout:g}s waiting for {self.url}{retried}"
        elif _caused_by(e, ConnectionRefusedError) or "connection refused" in str(
                e.__cause__ or "").lower():
            msg = (f"connection refused by {self.url}: is the server running? "
                   f"({self._fix}){retried}")
        elif isinstance(e, openai.APIConnectionError):
            msg = f"could not reach {self.url}{retried}: {e.__cause__ or e}"
        elif isinstance(e, json.JSONDecodeError):
            msg = (f"malformed JSON from {self.url} ({e.msg} at char {e.pos}): "
                   f"{_excerpt(e.doc)!r}")
        else:
            msg = f"request to {self.url} failed: {type(e).__name__}: {e}"
        return ModelError(self._redact(" ".join(msg.split())))

    # -- the response ----------------------------------------------------------------
    def parse_response(self, data: Any) -> ModelResponse:
        """A chat-completions JSON body as a ModelResponse."""
        try:
            choice = data["choices"][0]
            msg = choice["message"]
            if not isinstance(msg, dict):
                raise TypeError
        except (KeyError, IndexError, TypeError):
            raise ModelError(f"unexpected response from {self.url}: no choices[0].message "
                             f"in {_excerpt(json.dumps(data, ensure_ascii=False))!r}") from None
        content = msg.get("content")
        if isinstance(content, list):  # some servers send content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if content is not None and not isinstance(content, str):
            raise ModelError(f"unexpected content type {type(content).__name__} from {self.url}")
        calls = [self._tool_call(i, tc) for i, tc in enumerate(msg.get("tool_calls") or [])]
        usage = data.get("usage") or {}
        return ModelResponse(
            text=content if content else None,
            tool_calls=calls,
            usage=Usage(input_tokens=int(usage.get("prompt_tokens") or 0),
                        output_tokens=int(usage.get("completion_tokens") or 0)),
            model=str(data.get("model") or self.model),
            finish_reason=choice.get("finish_reason"))

    def _tool_call(self, i: int, tc: Any) -> ToolCallPart:
        fn = (tc.get("function") or {}) if isinstance(tc, dict) else None
        if not isinstance(fn, dict):
            raise ModelError(f"tool call {i} from {self.url} is malformed: {_excerpt(repr(tc))}")
        name = fn.get("name")
        if not name or not isinstance(name, str):
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
        call_id = tc.get("id")
        if not call_id:  # some servers omit ids; derive a stable one
            digest = hashlib.sha1(f"{i}:{name}:{json.dumps(args, sort_keys=True)}"
                                  .encode()).hexdigest()[:12]
            call_id = f"call-{digest}"
        return ToolCallPart(id=str(call_id), name=name, args=args)


def _caused_by(e: BaseException, kind: type[BaseException]) -> bool:
    seen: BaseException | None = e
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _provider_message(e: Any) -> str:
    """The provider's own error message from an SDK status error."""
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        for key in ("message", "error", "detail"):
            if isinstance(body.get(key), str) and body[key]:
                return _excerpt(body[key])
        return _excerpt(json.dumps(body, ensure_ascii=False))
    if isinstance(body, str) and body.strip():
        return _excerpt(body)
    try:
        text = e.response.text
    except Exception:  # noqa: BLE001 - a closed stream has no text
        text = ""
    return _excerpt(text) or "(no error message)"
