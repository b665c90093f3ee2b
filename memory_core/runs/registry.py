"""Rebuilds embedders, models and recall settings from what provenance recorded, so
analysis of a stored run can re-score and re-run without the caller wiring them up again."""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import ValidationError

from memory_core.embedding.hashing import Embedder, HashingEmbedder
from memory_core.errors import InvalidInputError

if TYPE_CHECKING:
    from memory_core.models.base import Model, ModelIdentity
    from memory_core.provenance.record import CompositionSettings
    from memory_core.recall.config import RecallConfig

_EMBEDDERS: dict[str, Embedder] = {}


def embedder_from_name(name: str | None) -> Embedder | None:
    """``hashing-<dim>`` or ``all-MiniLM-L6-v2``; None for a run composed without one.
    Instances are shared so the MiniLM cache is reused across analyses."""
    if name is None:
        return None
    if name in _EMBEDDERS:
        return _EMBEDDERS[name]
    emb: Embedder
    if name.startswith("hashing-") and name[len("hashing-"):].isdigit():
        emb = HashingEmbedder(int(name[len("hashing-"):]))
    elif name == "all-MiniLM-L6-v2":
        from memory_core.embedding.minilm import MiniLMEmbedder

        emb = MiniLMEmbedder()
    else:
        raise InvalidInputError(
            f"cannot rebuild the embedder {name!r} recorded for this run; pass embed=...")
    _EMBEDDERS[name] = emb
    return emb


def resolve_embedder(settings: CompositionSettings, embed: Embedder | None) -> Embedder | None:
    """``embed`` when the caller passed one, else the embedder the run recorded."""
    return embed if embed is not None else embedder_from_name(settings.embedder)


# -- models ------------------------------------------------------------------------------
READER_NAMES = ("reader", "offline-reader")
_SCRIPTED_NAMES = ("scripted", "scripted-playback", "raising")
_SAMPLING = ("temperature", "top_p", "seed", "max_tokens")


def recorded_identity(info: ModelIdentity | Mapping[str, Any] | None) -> ModelIdentity:
    """The identity a step record holds, as a ModelIdentity. Records written before
    identities were typed hold ``{"name", "temperature", "seed"}``: ``offline-reader`` is
    the reader, ``openai:<name>`` and any other unknown bare name (``llama3.1``, an
    imported ``gpt-4o-mini-2024-07-18``) a model served by an OpenAI-compatible server."""
    from memory_core.models.base import ModelIdentity

    if isinstance(info, ModelIdentity):
        return info
    if not info:
        raise InvalidInputError("the run recorded no model (it has no model step)")
    if "kind" in info:
        try:
            return ModelIdentity.model_validate(dict(info))
        except ValidationError as e:
            first = e.errors()[0]
            raise InvalidInputError(
                f"the run's recorded model {dict(info)!r} is malformed: "
                f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    name = str(info.get("name") or "")
    if not name:
        raise InvalidInputError(f"the run's recorded model {dict(info)!r} has no name")
    kind = "openai"
    if name == "offline-reader":
        kind = "reader"
    elif name == "extractive-summarizer":
        kind = "summarizer"
    elif name in _SCRIPTED_NAMES:
        kind = "scripted"
    elif name.startswith("openai:"):
        name = name[len("openai:"):]

    def num(key: str) -> Any:
        v = info.get(key)
        return v if isinstance(v, int | float) and not isinstance(v, bool) else None

    seed = num("seed")
    return ModelIdentity(kind=kind, name=name, temperature=num("temperature"),
                         seed=int(seed) if seed is not None else None)


_KIND_LABELS = {"reader": "the offline reader", "openai": "an OpenAI-compatible model",
                "imported": "an imported recording", "scripted": "a scripted model",
                "summarizer": "the extractive summariser", "custom": "a custom model"}


def describe_model(identity: ModelIdentity) -> str:
    """A one-line label: ``llama3.1 (an OpenAI-compatible model, http://…/v1,
    temperature 0.7)``."""
    bits = [_KIND_LABELS.get(identity.kind, "a custom model")]
    bits += [identity.base_url] if identity.base_url else []
    bits += [f"{k.replace('_', ' ')} {getattr(identity, k)}" for k in _SAMPLING
             if getattr(identity, k) is not None and identity.kind != "reader"]
    return f"{identity.name} ({', '.join(bits)})"


class ModelPlan(NamedTuple):
    """The model a re-run will ask: its identity (credential-free), for a server the
    base URL to call (which may carry credentials: never shown), and whether the API key
    of the ``MEMWB_OPENAI_*`` variables goes with the requests (only to the host it was
    configured for)."""

    identity: ModelIdentity
    base_url: str | None = None
    send_key: bool = True


class RecordedServerError(InvalidInputError):
    """The run's model was a server that the database names but nobody configured: it
    is asked again only when the user names it (``base_url``, ``MEMWB_OPENAI_BASE_URL``)
    or confirms it (``use_recorded_server=True``). ``server`` is its credential-free
    base URL, ``host`` what a page shows of it."""

    def __init__(self, message: str, server: str, host: str) -> None:
        super().__init__(message)
        self.server = server
        self.host = host


def _origin(url: str | None) -> tuple[str, str, int | None] | None:
    """Scheme, host and port of ``url`` (the default port filled in); None if unparsable."""
    if not url:
        return None
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    scheme = parts.scheme.lower()
    return scheme, parts.hostname.lower(), port or {"http": 80, "https": 443}.get(scheme)


def recorded_server(recorded: ModelIdentity | Mapping[str, Any] | None) -> str | None:
    """The credential-free base URL of the server a run's model was asked at, when it
    was an OpenAI-compatible server (never an imported recording's provider)."""
    from memory_core.models.openai_chat import public_url

    try:
        ident = recorded_identity(recorded)
    except InvalidInputError:
        return None
    if ident.kind != "openai" or not ident.base_url:
        return None
    return public_url(ident.base_url)


def server_host(url: str) -> str:
    """``host[:port]`` of a base URL, as a confirmation shows it."""
    try:
        parts = urllib.parse.urlsplit(url)
        return parts.netloc.rpartition("@")[2] or url
    except ValueError:
        return url


def plan_model_for_run(recorded: ModelIdentity | Mapping[str, Any] | None, *,
                       override: str | None = None, base_url: str | None = None,
                       use_recorded_server: bool = False,
                       environ: Mapping[str, str] | None = None) -> ModelPlan:
    """Which model re-asks a recorded run, without building it (nothing is loaded or
    contacted). ``override`` is ``"reader"`` (the offline reader) or a model name served
    by an OpenAI-compatible server; ``base_url`` names that server. Without them, the
    run's own model: the reader, or its recorded name and sampling parameters at
    ``MEMWB_OPENAI_BASE_URL``.

    A database is data from elsewhere: the base URL a run recorded is called only when
    the caller confirms it with ``use_recorded_server=True`` (below ``base_url``, above
    ``MEMWB_OPENAI_BASE_URL``); otherwise a run recorded from a server nobody configured
    raises RecordedServerError naming it. The API key goes only to the host it was
    configured for: with ``base_url`` or ``MEMWB_OPENAI_BASE_URL``, or at the recorded
    server when that is the host (scheme, host and port) of ``MEMWB_OPENAI_BASE_URL``;
    at any other recorded server ``send_key`` is False. An imported recording's
    provider is never called. InvalidInputError says what is missing, naming the
    variable to set."""
    from memory_core.models.base import ModelIdentity
    from memory_core.models.openai_chat import ENV_BASE_URL, public_url

    env = os.environ if environ is None else environ
    if override is not None and (not isinstance(override, str) or not override.strip()):
        raise InvalidInputError(f"model must be a model name or 'reader', got {override!r}")
    name = override.strip() if override else None
    if name in READER_NAMES:
        if base_url:
            raise InvalidInputError(f"the offline reader runs here and takes no base URL "
                                    f"(got {public_url(base_url)!r})")
        return ModelPlan(ModelIdentity(kind="reader", name="offline-reader", temperature=0.0))
    ident: ModelIdentity | None
    if name is None:
        ident = recorded_identity(recorded)
        if ident.kind == "reader" and not base_url:
            return ModelPlan(ident)
        if ident.kind not in ("openai", "imported"):
            what = _KIND_LABELS.get(ident.kind, "a custom model")
            raise InvalidInputError(
                f"the run's model {ident.name!r} is {what} that cannot be rebuilt from the "
                "journal" + (
                    f"; name the model to ask at {public_url(base_url)!r}" if base_url else
                    "; choose the offline reader or a model served by an OpenAI-compatible "
                    "server to re-ask it"))
        name = ident.name
    else:
        try:
            ident = recorded_identity(recorded) if recorded else None
        except InvalidInputError:
            ident = None
    served = ident is not None and ident.kind in ("openai", "imported")
    stored = ident.base_url if ident is not None and ident.kind == "openai" else None
    configured = env.get(ENV_BASE_URL) or None
    send_key = True
    if base_url:
        url: str | None = base_url
    elif stored and use_recorded_server:
        url = stored
        send_key = configured is not None and _origin(stored) == _origin(configured)
    elif configured:
        url = configured
    elif stored:
        server = public_url(stored)
        asked = (f"the run's model {name!r} was asked at {server}" if override is None
                 else f"no server is configured for the model {name!r}; the run was asked "
                      f"at {server}")
        raise RecordedServerError(
            f"{asked}, a server named by this database: pass --base-url {server} (or set "
            f"{ENV_BASE_URL}) to ask it again; a database's recorded server is never "
            "called unless you name it", server, server_host(server))
    else:
        url = None
    if not url:
        what = ("was recorded from an imported trace" if ident is not None
                and ident.kind == "imported" and name == ident.name else
                "is served by an OpenAI-compatible server")
        raise InvalidInputError(
            f"the model {name!r} {what}, and none is configured: set {ENV_BASE_URL} to the "
            f"server's base URL (e.g. http://127.0.0.1:11434/v1 for Ollama)")
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname
    except ValueError as e:  # "http://[::1": an unclosed IPv6 bracket
        raise InvalidInputError(f"{url[:200]!r} is not a URL: {e}") from None
    if parts.scheme not in ("http", "https") or not host:
        source = "the given base URL" if base_url else (
            "the recorded base URL" if url is stored else ENV_BASE_URL)
        raise InvalidInputError(f"{public_url(url)!r} ({source}) is not an http:// or "
                                "https:// URL with a host")
    sampling = {k: getattr(ident, k) for k in _SAMPLING} if served and ident else {}
    return ModelPlan(ModelIdentity(kind="openai", name=name, base_url=public_url(url),
                                   **sampling), url, send_key)


def model_for_run(recorded: ModelIdentity | Mapping[str, Any] | None, *,
                  override: Model | str | None = None, base_url: str | None = None,
                  use_recorded_server: bool = False, embed_name: str | None = None,
                  environ: Mapping[str, str] | None = None) -> Model:
    """The model to re-ask a recorded run with (see ``plan_model_for_run``, which says
    when the run's recorded server is called and when the API key goes with it); a
    Model object as ``override`` is used as it is. The reader gets the embedder the run
    was composed with (``embed_name``); a server model its timeout and retries from the
    ``MEMWB_OPENAI_*`` variables, and their API key only where the plan sends it."""
    if override is not None and not isinstance(override, str):
        if not callable(getattr(override, "complete", None)):
            raise InvalidInputError(f"model must be a model object, a model name or "
                                    f"'reader', got {override!r}")
        return override
    plan = plan_model_for_run(recorded, override=override, base_url=base_url,
                              use_recorded_server=use_recorded_server, environ=environ)
    ident = plan.identity
    if ident.kind == "reader":
        from memory_core.models.reader import ReaderModel

        return ReaderModel(embed=embedder_from_name(embed_name), name=ident.name)
    from memory_core.models.openai_chat import OpenAIChatModel

    return OpenAIChatModel(base_url=plan.base_url, model=ident.name,
                           temperature=ident.temperature, seed=ident.seed, top_p=ident.top_p,
                           max_tokens=ident.max_tokens, key_from_env=plan.send_key,
                           environ=environ)


def model_from_info(info: Mapping[str, Any], embed_name: str | None) -> Model:
    """The model a run recorded, rebuilt (``model_for_run`` with no override)."""
    return model_for_run(info, embed_name=embed_name)


def recall_config_from_settings(settings: CompositionSettings) -> RecallConfig:
    """The RecallConfig a run composed with: the one its settings recorded (every
    field, since memctx v2), or RecallConfig's defaults when none was recorded."""
    from memory_core.recall.config import RecallConfig

    return settings.recall if settings.recall is not None else RecallConfig()
