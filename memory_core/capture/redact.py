"""Key-shaped strings out of what the capture servers record: an upstream that echoes
the client's key ("Incorrect API key provided: sk-…") must not put it in the database."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# OpenAI (sk-…, sk-proj-…), Anthropic (sk-ant-…), OpenRouter (sk-or-…) and the like,
# Groq (gsk_…), Google (AIza…), xAI (xai-…), Hugging Face (hf_…): the prefix is kept so
# a reader still sees which kind of key it was
_KEY = re.compile(r"\b(sk-(?:ant-(?:api\d+-)?|proj-|svcacct-|admin-)?)[A-Za-z0-9_\-]{12,}"
                  r"|\b(gsk_|AIza|xai-|hf_)[A-Za-z0-9_\-]{20,}")
# a bearer token in prose ("Bearer abc…"): long enough not to be an ordinary word
_BEARER = re.compile(r"\b(Bearer)\s+[A-Za-z0-9._~+/=\-]{16,}", re.IGNORECASE)
# request headers whose value is a credential (their exact value is redacted anywhere)
SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key",
                            "x-goog-api-key", "proxy-authorization"})


def header_secrets(headers: Any) -> list[str]:
    """The credential values a request's headers carry (``Bearer `` stripped too)."""
    out: list[str] = []
    for k, v in headers.items():
        if k.lower() in SECRET_HEADERS and v:
            out.append(v)
            scheme, _, token = v.partition(" ")
            if token.strip() and scheme.lower() in ("bearer", "basic"):
                out.append(token.strip())
    return out


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with each exact secret (at least 6 characters) replaced by
    ``[redacted key]`` and key-shaped strings by ``<prefix>…[redacted]``."""
    for secret in sorted({s for s in secrets if len(s) >= 6}, key=len, reverse=True):
        text = text.replace(secret, "[redacted key]")
    text = _KEY.sub(lambda m: f"{m.group(1) or m.group(2)}…[redacted]", text)
    return _BEARER.sub(lambda m: f"{m.group(1)} [redacted]", text)


def redact(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A JSON value with every string in it (keys included) passed through
    ``redact_text``."""
    found = list(secrets)
    if isinstance(value, str):
        return redact_text(value, found)
    if isinstance(value, dict):
        return {redact_text(k, found) if isinstance(k, str) else k: redact(v, found)
                for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, found) for v in value]
    return value
