"""A process racing others to run the same run ids (tests/test_run_claims.py).

argv: storage URL, log file, start time (unix), number of run ids. Every model call
and every tool application appends one line to the log; RunInProgress is counted."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory_core.composition.memory import AgentMemory
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.errors import RunInProgress  # noqa: E402
from memory_core.models.base import ModelResponse, Tool, ToolSpec  # noqa: E402
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.url import open_storage  # noqa: E402
from memory_core.types import Message, ToolCallPart  # noqa: E402

URL, LOG, START, N = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])


def log(line: str) -> None:
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


class ChargingModel:
    """Calls the charge tool once, then answers; logs every call."""

    name = "charging"

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        log(f"model {self.run_id} {os.getpid()}")
        time.sleep(0.01)  # a model takes time: the others pile up meanwhile
        if messages[-1].role != "tool":
            return ModelResponse(tool_calls=[ToolCallPart(id="c1", name="charge",
                                                          args={"cents": 500})])
        return ModelResponse(text="charged")


def main() -> None:
    storage = open_storage(URL)
    memory = AgentMemory(storage, embed=HashingEmbedder(32), recent_n=2)
    busy = 0
    while time.time() < START:
        time.sleep(0.001)
    for i in range(N):
        rid = f"claim-{i}"
        charge = Tool(ToolSpec("charge", "charge the card"),
                      lambda a, rid=rid: log(f"tool {rid} {os.getpid()}") or {"ok": True})
        agent = Agent("a", "Charge once.", ChargingModel(rid), tools=[charge])
        runner = Runner(storage, {"a": agent}, memory=memory)
        try:
            runner.run("a", run_id=rid, thread_id=f"t-{i}", resource_id="u", prompt="pay")
        except RunInProgress:
            busy += 1
    storage.close()
    print(busy)


if __name__ == "__main__":
    main()
