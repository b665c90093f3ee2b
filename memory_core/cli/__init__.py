"""memwb: the command-line face of memory_core. Each command opens the storage, calls
one library function and prints its result; errors become one `error:` line and exit 1.

The Typer app and what every command shares are in ``common``; the commands, by what
they do, in ``workbench`` (demo, ui), ``data`` (import, erase), ``runs`` (threads …
diff) and ``capture`` (proxy, collect)."""

from __future__ import annotations

from memory_core.cli import capture, data, runs, whatif, workbench  # noqa: F401  (registers them)
from memory_core.cli.common import app, emit_json
from memory_core.cli.data import ImportProgress
from memory_core.cli.workbench import bundle_dir, demo_refusal

__all__ = ["ImportProgress", "app", "bundle_dir", "demo_refusal", "emit_json", "main"]


def main() -> None:
    app()


if __name__ == "__main__":
    main()
