"""Record formats: one module per kind of record a file of model calls holds (a chat
completions record, an Anthropic Messages API record, a LangSmith run, …), each
declaring a ``RecordFormat`` named ``FORMAT``: how it recognises a record, its
priority, the URL paths of the API it reads (``Route``) and how it turns a record into
``Exchange``s. ``importers/registry.py`` lists them, in priority order, and gives each
record of a file (what a container — JSON lines, a VCR cassette, a HAR file — yields)
to the first whose ``matches`` holds. See docs/importing.md, "Adding a format"."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memory_core.importers.common import Exchange


@dataclass(frozen=True)
class Route:
    """URL paths of one API: a path ending with one of ``suffixes``, containing
    ``within`` and not matching ``unless`` calls it. A record whose ``url`` is one of
    them has ``Record.api`` = ``api``, unless ``not_for(record)`` says it is another
    API's."""

    api: str
    suffixes: tuple[str, ...]
    within: str = ""
    unless: re.Pattern[str] | None = None
    # a record to one of these paths that another API's shape plainly answers (Writer's
    # OpenAI-compatible chat at ``/v1/chat``, Cohere v1's path too): not this API's
    not_for: Callable[[dict[str, Any]], bool] | None = None

    def serves(self, path: str) -> bool:
        """Whether ``path`` (no query, no fragment, no trailing slash) calls this API."""
        return path.endswith(self.suffixes) and self.within in path and not (
            self.unless is not None and self.unless.search(path))


@dataclass
class Record:
    """One record of a file, as a format reads it. ``index`` is the index its first
    exchange gets; ``api`` the API its ``url`` calls (``registry.route``), None when it
    has no URL or one no format serves; ``file_state`` what reading the file's earlier
    records left for the later ones, by format name (the Responses API's responses by
    id, which a later request continues)."""

    obj: dict[str, Any]
    where: str
    index: int
    api: str | None = None
    file_state: dict[str, Any] | None = None

    @property
    def request(self) -> Any:
        """The request: the ``request`` of a wrapped record, the record itself when flat."""
        return self.obj.get("request", self.obj)

    @property
    def path(self) -> str | None:
        """The record's URL without its query, when it has one."""
        url = self.obj.get("url")
        return url.split("?", 1)[0] if isinstance(url, str) else None

    def state(self, name: str, new: Callable[[], Any]) -> Any:
        """The file's state kept under ``name`` (``new()`` the first time)."""
        if self.file_state is None:
            self.file_state = {}
        if name not in self.file_state:
            self.file_state[name] = new()
        return self.file_state[name]


@dataclass(frozen=True)
class RecordFormat:
    """A kind of record. ``matches(record)`` says whether a record is one (by its URL's
    ``record.api``, its keys, or both); formats are tried in ascending ``priority``
    (unique: ``registry.check_formats``) and the first that matches reads it:
    ``read(record)`` gives its exchanges, or raises ``ImportFormatError`` naming
    ``record.where``. ``routes``: the URL paths of the API it reads. ``dated_by``: the
    record key giving a call its time when its body gives none (an ISO time).
    ``timed_by``: the record keys holding the recorder's own start and end of the call,
    which come before the body's time (a response's ``created`` counts whole
    seconds)."""

    name: str
    priority: int
    matches: Callable[[Record], bool]
    read: Callable[[Record], list[Exchange]]
    routes: tuple[Route, ...] = ()
    dated_by: str = "recorded_at"
    timed_by: tuple[str, str] = ("started_at", "finished_at")


def by_url_or_keys(record: Record, apis: tuple[str, ...],
                   keys: Callable[[dict[str, Any]], bool]) -> bool:
    """The rule of the formats of one API: a record whose URL calls one of ``apis`` is
    theirs; a record whose URL calls another API is not; a record with no URL an API is
    known by is theirs when ``keys(record.obj)`` recognises its shape."""
    if record.api is not None:
        return record.api in apis
    return keys(record.obj)
