"""Code written for the original client (bench-observe 0.1.3) runs unchanged on ours.

The original is installed from the package registry into an isolated directory (it is also
called ``bench``) and run in a subprocess; both clients run the same README examples against the
same loopback server and the events they send are compared field by field.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import HANG_GUARD, FaultServer, run_python

README_EXAMPLES = textwrap.dedent('''
    import asyncio
    from bench import observe

    agent = observe(api_key="bk_xxx", agent="my-agent")

    # stand-ins for the names the README leaves to the reader
    url, prompt, html, text, q = "https://example.com", "p", "<p>", "t", "python"
    input = {"doc": url}

    async def do_search():
        return ["a", "b", "c"]

    class llm:
        @staticmethod
        async def generate(prompt):
            return "summary"

    async def fetch_fn(t):
        return "html"

    async def parse_fn(t):
        t.log("parsed", True)
        return "text"

    async def embed_fn(t):
        t.cost(0.001)
        return [0.1]

    # README: Usage
    async def search(t):
        result = await do_search()
        t.log("found", len(result))
        t.cost(0.004)
        return result

    async def main():
        result = await agent.task("search", {"query": "python"}, search)
        print("result", result)

        # README: Context manager
        async with agent.task_ctx("summarize", {"doc": url}) as t:
            summary = await llm.generate(prompt)
            t.log("tokens", 1200)
            t.cost(0.012)

        # README: Subtasks
        async def pipeline(t):
            await t.subtask("fetch", {"url": url}, fetch_fn)
            await t.subtask("parse", {"html": html}, parse_fn)
            await t.subtask("embed", {"text": text}, embed_fn)

        print("pipeline", await agent.task("full-pipeline", input, pipeline))

        # README: Custom events
        agent.event("tool.use", {"tool": "search", "query": q})

        async def broken(t):
            raise ValueError("boom")

        try:
            await agent.task("broken", {"n": 1}, broken)
        except ValueError as exc:
            print("raised", exc)
        try:
            async with agent.task_ctx("broken-ctx", None) as t:
                raise KeyError("k")
        except KeyError:
            print("raised ctx")
        await agent.flush()

    asyncio.run(main())
''')

ORIGINAL_ENDPOINT_SHIM = textwrap.dedent('''
    import functools, os, bench
    bench.observe = functools.partial(bench.observe, endpoint=os.environ["BENCH_ENDPOINT"] + "/ingest")
''')


def pip_target(tmp_path_factory: pytest.TempPathFactory, requirement: str) -> Path:
    target = tmp_path_factory.mktemp(requirement.split("==")[0])
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), requirement],
        capture_output=True, text=True, timeout=300,
    )
    if result.returncode != 0:
        reason = (result.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"package registry unreachable, cannot install {requirement}: {reason}")
    return target


@pytest.fixture(scope="session")
def original_client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bench-observe 0.1.3, isolated: its import name clashes with ours."""
    return pip_target(tmp_path_factory, "bench-observe==0.1.3")


@pytest.fixture(scope="session")
def langchain_adapter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bench-langchain 0.1.0, which reaches into ``bench._client`` internals."""
    return pip_target(tmp_path_factory, "bench-langchain==0.1.0")


def run_examples(sink: FaultServer, tmp_path: Path, pythonpath: str = "", prelude: str = "") -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_")}
    env.update(BENCH_ENDPOINT=sink.url, XDG_CONFIG_HOME=str(tmp_path), PYTHONPATH=pythonpath,
               BENCH_SPOOL_DIR=os.environ["BENCH_SPOOL_DIR"])
    result = run_python(prelude + README_EXAMPLES, env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return result.stdout


def normalized(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events with ids, times and durations replaced by what they refer to."""
    names = {e["task_id"]: e["name"] for e in events if e["kind"] == "task.start"}
    out = []
    for event in sorted(events, key=lambda e: (e["ts"], e["kind"] != "task.start")):
        plain = {k: v for k, v in event.items() if k not in ("id", "ts", "duration_ms")}
        if "task_id" in plain:
            plain["task_id"] = names.get(plain["task_id"])
        if plain.get("parent_task_id"):
            plain["parent_task_id"] = names.get(plain["parent_task_id"])
        out.append(plain)
    return out


def by_identity(events: list[dict[str, Any]]) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {(e["kind"], e.get("task_id"), str(e.get("data"))[:40]): e for e in events}


def test_readme_examples_run_unchanged_and_send_what_the_original_sends(
    original_client: Path, tmp_path: Path
) -> None:
    ours_sink, theirs_sink = FaultServer(), FaultServer()
    ours_sink.start()
    theirs_sink.start()
    try:
        ours_out = run_examples(ours_sink, tmp_path)
        theirs_out = run_examples(theirs_sink, tmp_path, str(original_client), ORIGINAL_ENDPOINT_SHIM)
        ours = by_identity(normalized(ours_sink.unique_events()))
        theirs = by_identity(normalized(theirs_sink.unique_events()))
    finally:
        ours_sink.stop()
        theirs_sink.stop()

    assert ours_out == theirs_out, "same return values and exceptions"
    assert "raised boom" in ours_out and "raised ctx" in ours_out
    assert len(theirs) == 23 and set(ours) == set(theirs), "the same events"
    for key, original in theirs.items():
        mine = ours[key]
        assert set(original) <= set(mine), f"{key}: missing keys"
        for field, value in original.items():
            assert mine[field] == value, f"{key}: {field} differs"
    batch_keys = {"agent_slug", "display_name", "model", "framework", "architecture", "tools", "events"}
    assert batch_keys <= set(ours_sink.requests[0].body)


def test_seed_readme_set_output_example(make_agent, memory) -> None:
    import asyncio

    agent = make_agent()

    async def do_search(query: str) -> list[str]:
        return [query]

    async def main() -> None:
        query = "q"
        async with agent.task_ctx("search", {"query": query}) as task:
            result = await do_search(query)
            task.log("found", len(result))
            task.set_output(result)

    asyncio.run(main())
    assert agent.flush_sync(HANG_GUARD)
    assert memory.ends()["search"]["output"] == ["q"]


LANGCHAIN_STUB = {
    "langchain_core/__init__.py": "",
    "langchain_core/callbacks/__init__.py": "",
    "langchain_core/callbacks/base.py": "class BaseCallbackHandler:\n    def __init__(self):\n        pass\n",
    "langchain_core/outputs.py": "class LLMResult:\n    pass\n",
}


def test_langchain_adapter_built_on_the_original_internals_works(
    langchain_adapter: Path, sink: FaultServer, tmp_path: Path
) -> None:
    stub = tmp_path / "stub"
    for rel, text in LANGCHAIN_STUB.items():
        (stub / rel).parent.mkdir(parents=True, exist_ok=True)
        (stub / rel).write_text(text)
    code = textwrap.dedent('''
        import uuid
        from types import SimpleNamespace
        import bench
        from bench_langchain import BenchCallbackHandler

        agent = bench.observe(api_key="bk_lc", agent="lc-agent")
        handler = BenchCallbackHandler(agent)
        chain, llm = uuid.uuid4(), uuid.uuid4()
        handler.on_chain_start({"name": "qa"}, {"question": "q"}, run_id=chain)
        handler.on_llm_start({"name": "fake"}, ["prompt"], run_id=llm, parent_run_id=chain)
        handler.on_llm_end(SimpleNamespace(llm_output={"token_usage": {"total_tokens": 5}},
                                           generations=[[SimpleNamespace(text="answer")]]), run_id=llm)
        handler.on_chain_error(RuntimeError("chain broke"), run_id=chain)
    ''')
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_")}
    env.update(BENCH_ENDPOINT=sink.url, XDG_CONFIG_HOME=str(tmp_path), PYTHONPATH=f"{langchain_adapter}:{stub}")
    result = run_python(code, env)
    assert result.returncode == 0, result.stderr
    ends = {e["name"]: e for e in sink.of_kind("task.end")}
    assert ends["llm:fake"]["output"] == "answer"
    assert ends["qa"]["status"] == "failed" and ends["qa"]["output"] == "chain broke"
    assert all(e["ts"].endswith("Z") for e in sink.unique_events())
