"""Erases thread ``secret`` and SIGKILLs itself before its N-th write
(tests/test_erasure.py: a crash at a random point of an erasure).

argv: storage URL, N."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory_core.lifecycle.erasure import erase_thread
from memory_core.storage.url import open_storage  # noqa: E402

URL, KILL_AT = sys.argv[1], int(sys.argv[2])
calls = 0


def killing(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        global calls
        calls += 1
        if calls == KILL_AT:
            os.kill(os.getpid(), signal.SIGKILL)
        return fn(*args, **kwargs)
    return wrapped


def main() -> None:
    storage = open_storage(URL)
    for obj, names in ((storage.runs, ("delete", "put_if_absent", "delete_runs")),
                       (storage.memory, ("redact_message", "delete_thread",
                                         "put_working_memory", "redact_observation"))):
        for name in names:
            setattr(obj, name, killing(getattr(obj, name)))
    erase_thread(storage, "secret")
    storage.close()
    print(calls)


if __name__ == "__main__":
    main()
