"""open_storage(url) opens the adapter each URL form names, passes keyword arguments
on, refuses unknown schemes by name; describe_url hides passwords."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_core.errors import InvalidInputError
from memory_core.storage.inmemory import InMemoryStorage
from memory_core.storage.sqlite import SQLiteStorage
from memory_core.storage.url import describe_url, open_storage
from tests.pg_server import pg_dsn  # noqa: F401  (session fixture)

FIXED = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_memory_url_gives_in_memory_storage_with_kwargs() -> None:
    s = open_storage("memory://", clock=lambda: FIXED)
    assert isinstance(s, InMemoryStorage)
    assert s.memory.create_thread("t").created_at == FIXED


def test_sqlite_absolute_url_opens_that_file(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with open_storage(f"sqlite://{path}", clock=lambda: FIXED) as s:
        assert isinstance(s, SQLiteStorage)
        s.memory.create_thread("t", resource_id="r")
    with SQLiteStorage(path) as again:
        t = again.memory.require_thread("t")
        assert (t.resource_id, t.created_at) == ("r", FIXED)


def test_sqlite_relative_url_is_relative_to_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with open_storage("sqlite://sub.db") as s:
        s.memory.create_thread("t")
    assert (tmp_path / "sub.db").exists()


@pytest.mark.parametrize("url", ["sqlite://:memory:", "sqlite:///:memory:"])
def test_sqlite_memory_urls(url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with open_storage(url) as s:
        assert isinstance(s, SQLiteStorage) and s.path == ":memory:"
        s.memory.create_thread("t")
    assert list(tmp_path.iterdir()) == []


def test_duckdb_url_and_bare_path_open_duckdb(tmp_path: Path) -> None:
    from memory_core.storage.duckdb import DuckDBStorage

    with open_storage(f"duckdb://{tmp_path / 'a.duckdb'}") as a:
        assert isinstance(a, DuckDBStorage)
        a.memory.create_thread("ta")
    with open_storage(str(tmp_path / "a.duckdb")) as b:
        assert isinstance(b, DuckDBStorage)
        assert b.memory.get_thread("ta") is not None
    with open_storage("duckdb:///:memory:") as c:
        assert isinstance(c, DuckDBStorage)
        assert c.memory.list_threads() == []


@pytest.mark.postgres
@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
def test_postgres_url_with_schema_parameter(pg_dsn: str, scheme: str,  # noqa: F811
                                            tmp_path: Path) -> None:
    from memory_core.storage.postgres import PostgresStorage
    from tests.pg_server import schema_for

    schema = schema_for(pg_dsn, tmp_path)
    url = scheme + pg_dsn[pg_dsn.index("://"):]
    with open_storage(f"{url}?schema={schema}", clock=lambda: FIXED) as s:
        assert isinstance(s, PostgresStorage)
        assert s.schema == schema
        s.memory.create_thread("pt")
    with PostgresStorage(pg_dsn, schema=schema) as same:
        assert same.memory.require_thread("pt").created_at == FIXED
    with PostgresStorage(pg_dsn, schema=schema + "_other") as other:
        assert other.memory.get_thread("pt") is None


def test_unknown_scheme_is_refused_by_name() -> None:
    with pytest.raises(InvalidInputError, match="'mysql'"):
        open_storage("mysql://u:secret@host/db")
    with pytest.raises(InvalidInputError) as info:
        open_storage("mysql://u:secret@host/db")
    assert "secret" not in str(info.value)


@pytest.mark.parametrize("url", ["", "   ", "sqlite://"])
def test_empty_url_or_path_is_refused(url: str) -> None:
    with pytest.raises(InvalidInputError):
        open_storage(url)


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://bob:s3cr%40t@db:5432/mem", "postgresql://bob:***@db:5432/mem"),
    ("postgres://bob:p@ss@db/mem", "postgres://bob:***@db/mem"),
    ("postgresql://bob@db/mem", "postgresql://bob@db/mem"),
    ("postgresql://db:5432/mem", "postgresql://db:5432/mem"),
    ("postgresql://db/mem?user=bob&password=hunter2", "postgresql://db/mem?user=bob&password=***"),
    ("host=db user=bob password=hunter2 dbname=mem", "host=db user=bob password=*** dbname=mem"),
    ("host=db password='hun ter2' dbname=mem", "host=db password=*** dbname=mem"),
    ("sqlite:///tmp/x.db", "sqlite:///tmp/x.db"),
])
def test_describe_url_hides_passwords(url: str, shown: str) -> None:
    assert describe_url(url) == shown


def test_file_of_names_the_database_file() -> None:
    from memory_core.storage.url import file_of

    assert file_of("data/x.duckdb") == ("duckdb", "data/x.duckdb")
    assert file_of("duckdb:///abs/x.duckdb") == ("duckdb", "/abs/x.duckdb")
    assert file_of("sqlite://rel.db") == ("sqlite", "rel.db")
    assert file_of("duckdb:///:memory:") is None
    assert file_of("memory://") is None
    assert file_of("postgresql://u@h/db") is None


def test_open_existing_never_creates_a_database(tmp_path: Path) -> None:
    from memory_core.errors import InvalidInputError, NotFoundError
    from memory_core.storage.duckdb import DuckDBStorage
    from memory_core.storage.url import open_existing

    for url in (str(tmp_path / "no.duckdb"), f"sqlite://{tmp_path / 'no.db'}"):
        with pytest.raises(NotFoundError, match="does not exist"):
            open_existing(url)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(InvalidInputError, match="is a directory"):
        open_existing(str(tmp_path))
    DuckDBStorage(str(tmp_path / "x.duckdb")).close()
    s = open_existing(str(tmp_path / "x.duckdb"), read_only=True)
    try:
        assert s.read_only  # type: ignore[attr-defined]
    finally:
        s.close()
