"""The original system's published client (bench-observe 0.1.3), unchanged, against our server."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import httpx

from tests.conftest import RunningServer

AGENT_SCRIPT = textwrap.dedent('''
    import asyncio, os
    import bench

    agent = bench.observe(api_key=os.environ["BENCH_KEY"], agent="legacy-agent",
                          display_name="Legacy Agent", model="llama-3.3-70b",
                          framework="custom", tools=["search", "fetch"],
                          endpoint=os.environ["BENCH_ENDPOINT"], flush_interval_ms=50)

    async def fetch(t):
        t.log("bytes", 512)
        t.cost(0.002)
        return "page"

    async def search(t):
        t.log("found", 3)
        t.cost(0.001)
        page = await t.subtask("fetch", {"url": "https://example.org"}, fetch)
        t.metadata({"pages": 1})
        return [page, 2, 3]

    async def explode(t):
        raise RuntimeError("upstream timed out")

    async def main():
        assert await agent.task("search", {"query": "bench"}, search) == ["page", 2, 3]
        async with agent.task_ctx("summarize", {"doc": 1}) as t:
            t.cost(0.004)
            t.log("words", 120)
        try:
            await agent.task("explode", {"n": 1}, explode)
        except RuntimeError as exc:
            assert str(exc) == "upstream timed out"
        else:
            raise SystemExit("the failing task did not raise")
        agent.event("tool.use", {"tool": "search"})
        await agent.flush()

    asyncio.run(main())
''')


def run_original_client(server: RunningServer, client_dir: Path, tmp_path: Path, source: str,
                        slug: str) -> tuple[str, str]:
    """Run `source` with the original client against `server`, for a new login whose agent
    `slug` shows its content; (login, key)."""
    login = "legacy" + uuid.uuid4().hex[:6]
    key = server.create_key(login)
    server.showing_content(login, slug)
    script = tmp_path / "agent.py"
    script.write_text(source)
    env = {**os.environ, "PYTHONPATH": str(client_dir), "BENCH_KEY": key,
           "BENCH_ENDPOINT": server.url + "/ingest"}
    result = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                            text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "[bench]" not in result.stderr, result.stderr
    return login, key


def test_the_original_client_runs_unchanged_against_our_server(
        bench_server: RunningServer, original_client_dir: Path, tmp_path: Path) -> None:
    login, key = run_original_client(bench_server, original_client_dir, tmp_path, AGENT_SCRIPT,
                                     "legacy-agent")

    profile = bench_server.get(f"/api/agents/{login}/legacy-agent")
    assert profile["display_name"] == "Legacy Agent" and profile["model"] == "llama-3.3-70b"
    assert profile["tools"] == ["search", "fetch"]
    assert (profile["runs"], profile["successes"], profile["failures"]) == (3, 2, 1)
    # search: 0.001 + its subtask's 0.002; summarize: 0.004; explode: nothing. Each once.
    assert abs(profile["cost_usd_total"] - 0.007) < 1e-9

    tasks = {t["name"]: t for t in bench_server.get(  # the owner: content is hidden by default
        f"/api/agents/{login}/legacy-agent/tasks", key)["tasks"]}
    assert set(tasks) == {"search", "summarize", "explode"}
    assert tasks["search"]["output"] == ["page", 2, 3]
    assert tasks["search"]["metadata"] == {"pages": 1}
    assert len(tasks["search"]["subtask_ids"]) == 1
    assert tasks["explode"]["status"] == "failed"
    assert tasks["explode"]["output"] == "upstream timed out"
    assert tasks["search"]["version"] is None, "0.1.3 sends no version"
    assert bench_server.get(f"/api/agents/{login}/legacy-agent/versions")["versions"] == []
    sub = bench_server.get(f"/api/agents/{login}/legacy-agent/tasks/"
                           f"{tasks['search']['subtask_ids'][0]}", key)
    assert sub["name"] == "fetch" and sub["input"] == {"url": "https://example.org"}
    kinds = [e["kind"] for e in bench_server.get(f"/api/agents/{login}/legacy-agent/events",
                                                 limit=100)["events"]]
    assert kinds.count("task.end") == 4 and "tool.use" in kinds
    run = bench_server.get(f"/api/agents/{login}/legacy-agent/runs/{tasks['search']['task_id']}",
                           key)
    assert [(s["name"], s["depth"], s["parent_id"]) for s in run["spans"]] == [
        ("search", 0, None), ("fetch", 1, tasks["search"]["task_id"])]
    fetch_span = run["spans"][1]
    assert [(e["data"]["label"]) for e in fetch_span["logs"]] == ["bytes", "cost"]
    assert fetch_span["cost_usd"] == 0.002 and run["spans"][0]["cost_usd"] == 0.003
    html = httpx.get(f"{bench_server.url}/u/{login}/legacy-agent/runs/"
                     f"{tasks['search']['task_id']}?span={fetch_span['task_id']}",
                     headers={"X-Bench-Key": key}).text
    assert html.count('<svg class="wf"') == 2 and "bytes" in html and "512" in html
