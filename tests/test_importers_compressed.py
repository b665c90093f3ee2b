"""Import files kept compressed (gzip, bzip2, xz, zstd) read through, told by their first bytes;
a damaged compressed file is refused naming it; a parse error names its file."""

from __future__ import annotations

import bz2
import gzip
import lzma
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard

from memory_core.errors import ImportFormatError
from memory_core.importers import file_format, import_file
from memory_core.storage.inmemory import InMemoryStorage

FIXTURES = Path(__file__).parent / "fixtures" / "imports"
LOG = FIXTURES / "openai_support.jsonl"
OTLP = FIXTURES / "otel_genai.json"


def _summary(s: InMemoryStorage) -> tuple[list[str], list[list[str | None]]]:
    threads = sorted(t.id for t in s.memory.list_threads())
    return ([r.run_id for r in s.runs.list_runs()],
            [[m.as_message().text() for m in s.memory.get_messages(t)] for t in threads])


@pytest.mark.parametrize("suffix, compress", [
    ("gz", gzip.compress), ("bz2", bz2.compress), ("xz", lzma.compress),
    ("zst", zstandard.ZstdCompressor().compress)])
@pytest.mark.parametrize("source", [LOG, OTLP], ids=["openai", "otel"])
def test_a_compressed_file_imports_as_the_file(tmp_path: Path, suffix: str, source: Path,
                                               compress: Callable[[bytes], bytes]) -> None:
    plain = InMemoryStorage()
    want = import_file(plain, source)
    # named without its suffix: told by its bytes, not its name
    packed = tmp_path / f"{source.stem}-{suffix}.log"
    packed.write_bytes(compress(source.read_bytes()))
    assert file_format(packed) == want.format
    s = InMemoryStorage()
    got = import_file(s, packed)
    assert (got.format, got.sha1) == (want.format, want.sha1)  # the same content: same ids
    assert _summary(s) == _summary(plain) and _summary(s)[0]
    # the compressed copy of a file already imported is that file
    assert import_file(plain, packed).already_imported


def test_damaged_files_are_refused_naming_them(tmp_path: Path) -> None:
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(LOG.read_bytes())[:60])
    s = InMemoryStorage()
    with pytest.raises(ImportFormatError, match=r"file '.*cut\.jsonl\.gz' looks "
                                                r"gzip-compressed but cannot be decompressed"):
        import_file(s, cut)
    zst = tmp_path / "log.jsonl.zst"
    zst.write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 16)
    with pytest.raises(ImportFormatError, match=r"log\.jsonl\.zst' looks zstd-compressed "
                                                r"but cannot be decompressed"):
        import_file(s, zst)
    assert not s.memory.list_threads() and not s.runs.list_runs()


def test_a_parse_error_names_its_file(tmp_path: Path) -> None:
    bad = tmp_path / "second.jsonl"
    bad.write_text('{"messages": [}\n', encoding="utf-8")
    with pytest.raises(ImportFormatError) as e:
        import_file(InMemoryStorage(), bad)
    assert str(e.value).startswith(f"file '{bad}': line 1: invalid JSON")
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)))
    with pytest.raises(ImportFormatError) as e:
        import_file(InMemoryStorage(), junk)
    # "file: binary file …" named as the file, not as "file"
    assert str(e.value) == (f"file '{junk}': not an OTLP protobuf export, nor UTF-8 text "
                            "(byte 0x80 at offset 128 is not UTF-8)")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_utf16_text_with_its_byte_order_mark_imports_as_its_utf8(tmp_path: Path,
                                                                  encoding: str) -> None:
    """Windows PowerShell 5 writes redirected output as UTF-16 with a byte-order mark:
    such a file imports as the same file in UTF-8 does."""
    text = (FIXTURES / "openai_support.jsonl").read_text(encoding="utf-8")
    wide = tmp_path / "support.jsonl"
    data = text.encode(encoding)
    wide.write_bytes(data if data.startswith((b"\xff\xfe", b"\xfe\xff"))
                     else b"\xfe\xff" + data)
    plain = import_file(InMemoryStorage(), FIXTURES / "openai_support.jsonl")
    got = import_file(InMemoryStorage(), wide)
    assert (got.messages_stored, len(got.runs_created)) == (plain.messages_stored,
                                                            len(plain.runs_created))
    wide.write_bytes(b"\xff\xfe" + b"\x00\xd8")  # a lone surrogate: no UTF-16
    with pytest.raises(ImportFormatError, match="starts as UTF-16 text but is not"):
        import_file(InMemoryStorage(), wide)


# -- LangGraph's packed cassettes: base64 of zlib-compressed MessagePack ------------------------
PACKED = FIXTURES / "real" / "langgraph-agent_supervisor_882f9e00.msgpack.zlib"


def _packed(doc: object) -> str:
    import base64
    import zlib

    import msgpack

    return base64.b64encode(zlib.compress(msgpack.packb(doc))).decode()


def test_a_packed_cassette_reads_as_the_yaml_cassette_it_packs(tmp_path: Path) -> None:
    """Unpacked by hand and written as YAML, the same cassette imports alike: the
    packed one was refused as "line 1: invalid JSON"."""
    import base64
    import zlib

    import msgpack
    import yaml

    doc = msgpack.unpackb(zlib.decompress(base64.b64decode(PACKED.read_text())), raw=False)
    plain = tmp_path / "supervisor.yaml"
    plain.write_text(yaml.safe_dump(doc), encoding="utf-8")
    packed, as_yaml = InMemoryStorage(), InMemoryStorage()
    import_file(packed, PACKED)
    import_file(as_yaml, plain)
    assert _summary(packed)[1] == _summary(as_yaml)[1]  # (run ids hash each file)
    assert [r.agent for r in packed.runs.list_runs()] == \
        [r.agent for r in as_yaml.runs.list_runs()] and len(packed.runs.list_runs()) == 8


@pytest.mark.parametrize(("text", "error"), [
    # base64 of a zlib stream, then the text breaks off into what base64 never holds
    (_packed({"interactions": []})[:40] + "!!!", "whose text is not base64"),
    (_packed({"interactions": []})[:-8], "whose zlib stream cannot be read"),
    (__import__("base64").b64encode(__import__("zlib").compress(b"\xc1" * 40)).decode(),
     "whose MessagePack cannot be read"),
    (_packed({"version": 1}), "a cassette must have an 'interactions'"),
])
def test_a_packed_cassette_that_cannot_be_read_is_one_error(text: str, error: str) -> None:
    with pytest.raises(ImportFormatError, match=error):
        import_file(InMemoryStorage(), _write(text))


def _write(text: str) -> Path:
    import tempfile

    path = Path(tempfile.mkdtemp()) / "bad.msgpack.zlib"
    path.write_text(text, encoding="ascii")
    return path
