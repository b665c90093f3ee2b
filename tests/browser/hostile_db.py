"""A hostile workbench database: every stored string a page shows (thread, resource, run
and agent ids, titles, message text, tool names and results, metadata, model names, run
errors) carries Markdown links, remote images, raw HTML, script tags, LaTeX and Streamlit
directives, written through the real Runner so every page has something to show.

The remote addresses are loopback addresses other than 127.0.0.1 (the server's), so a
request to any of them is caught by the browser test and could never leave the machine.
"""

from __future__ import annotations

from datetime import UTC, datetime

from memory_core.composition.memory import AgentMemory
from memory_core.embedding.hashing import HashingEmbedder
from memory_core.models.base import ModelResponse, Tool, ToolSpec
from memory_core.models.scripted import ScriptedModel
from memory_core.recall.config import RecallConfig
from memory_core.runs.runner import Agent, Runner
from memory_core.storage.duckdb import DuckDBStorage
from memory_core.types import Message, ToolCallPart
from tests.helpers import Tick

EVIL_HOST = "127.0.0.2"  # any request to it (or to 127.0.0.3) means Markdown/HTML ran
IMG = f"http://{EVIL_HOST}/img.png"
LINK = f"http://{EVIL_HOST}/link"
PAYLOAD = (f"![x]({IMG}) [click]({LINK}) <img src=x onerror=alert(1)> "
           "<script>alert(2)</script> $$x^2$$ :red[red] :material/home: **bold** "
           f"&lt;b&gt; https://127.0.0.3/auto <a href=\"{LINK}\">a</a>")
# ids cannot hold ':' (run ids) so their image URLs are protocol-relative
RUN_A = f"run-A ![r](//{EVIL_HOST}/run.png) <img src=x onerror=alert(3)> $$r$$ *e*"
RUN_B = f"run-B [b](//{EVIL_HOST}/b) <b>B</b> ~~s~~"
RUN_FAILED = f"run-F ![f](//{EVIL_HOST}/f.png) <script>alert(4)</script>"
# backticks: an id is shown in a code span, whose fence must outgrow any run in it
THREAD = f"thread [t](http://{EVIL_HOST}/t) <i>i</i> :blue[t] $$t$$ `c` ``d"
RESOURCE = f"res ![x](http://{EVIL_HOST}/res.png) <img src=x onerror=alert(5)>"
AGENT = f"agent ![a](http://{EVIL_HOST}/agent.png) <u>u</u> :red[a]"
MODEL = f"model ![m](http://{EVIL_HOST}/model.png) <b>m</b>"
TOOL = "lookup_<b>order</b>_[x](y)"
TITLE = f"title {PAYLOAD}"
FACT = "the secret refund code is 4711"
QUESTION = "what is the refund code"
LITERALS = (PAYLOAD, RUN_A, RUN_B, THREAD, RESOURCE, AGENT)
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _tool() -> Tool:
    spec = ToolSpec(TOOL, f"Looks up {PAYLOAD}", {"type": "object", "properties": {}})
    return Tool(spec, lambda args: {"status": PAYLOAD})


def build_hostile_file(path: str) -> None:
    clock = Tick(T0)
    storage = DuckDBStorage(path, clock=clock)
    try:
        embed = HashingEmbedder()
        memory = AgentMemory(storage=storage, embed=embed, recent_n=2,
                             recall=RecallConfig(top_k=3, threshold=0.0, scope="resource"),
                             clock=clock)
        storage.memory.create_thread(THREAD, resource_id=RESOURCE, title=TITLE)
        memory.append(THREAD, [Message(role="user", content=f"{FACT}. {PAYLOAD}",
                                       metadata={"note": PAYLOAD})],
                      RESOURCE, created_at=clock())
        for i in range(3):
            memory.append(THREAD, [Message(role="assistant", content=f"filler {i} {PAYLOAD}")],
                          RESOURCE, created_at=clock())
        script = [ModelResponse(tool_calls=[ToolCallPart(id="c1", name=TOOL, args={"q": PAYLOAD})]),
                  ModelResponse(text=f"answer {PAYLOAD}"),
                  ModelResponse(text=f"second answer {PAYLOAD}")]
        agent = Agent(name=AGENT, instructions=f"instructions {PAYLOAD}",
                      model=ScriptedModel(script, name=MODEL), tools=[_tool()])
        runner = Runner(storage, {AGENT: agent}, memory=memory, clock=clock)
        runner.run(AGENT, run_id=RUN_A, thread_id=THREAD, resource_id=RESOURCE,
                   prompt=f"{QUESTION} {PAYLOAD}")
        runner.run(AGENT, run_id=RUN_B, thread_id=THREAD, resource_id=RESOURCE,
                   prompt=f"{QUESTION} again {PAYLOAD}")
        failing = Agent(name=AGENT, instructions="x", model=ScriptedModel([], name=MODEL))
        try:
            Runner(storage, {AGENT: failing}, memory=memory, clock=clock).run(
                AGENT, run_id=RUN_FAILED, thread_id=THREAD, resource_id=RESOURCE,
                prompt=PAYLOAD)
        except Exception:  # noqa: BLE001 - the failed run (and its error text) is the point
            pass
    finally:
        storage.close()


def build_secret_file(path: str, marker: str) -> None:
    """A Memory Workbench database the workbench is NOT started with."""
    storage = DuckDBStorage(path)
    try:
        storage.memory.create_thread("secret-thread", resource_id="secret", title=marker)
    finally:
        storage.close()
