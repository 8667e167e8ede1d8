"""The SDK against the real Bench server (the session fixture ``bench_server`` in tests/conftest.py).

Skipped, with the reason, where that fixture is not available (e.g. the SDK tested on its own).
"""

from __future__ import annotations

import asyncio
import os
import textwrap
from typing import Any

import bench
import pytest
from bench._sender import SenderConfig
from bench._transport import Response, UrllibTransport
from bench.cli import main as cli_main
from conftest import FAST, HANG_GUARD, run_python


class TwiceTransport(UrllibTransport):
    """Posts every batch twice, as a retry after a lost response would."""

    def post(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> Response:
        super().post(url, body, headers, timeout)
        return super().post(url, body, headers, timeout)


def observe(server: Any, login: str, slug: str, **kwargs: Any) -> bench.BenchAgent:
    return bench.BenchAgent(server.create_key(login), slug, endpoint=server.url, sender_config=FAST, **kwargs)


def workload(agent: bench.BenchAgent) -> None:
    """Three runs: async with subtasks, sync with a nested span, and a failure."""

    async def fetch(t):
        t.cost(0.25)
        return "page"

    async def research(t):
        t.log("plan", "two fetches")
        await asyncio.gather(t.subtask("fetch-a", {"u": "a"}, fetch), agent.task("fetch-b", {"u": "b"}, fetch))
        return {"answer": 42}

    asyncio.run(agent.task("research", {"q": "life"}, research))
    with agent.span("sync-run", {"n": 1}) as t, agent.span("sync-step"):
        t.cost(0.5)
    with pytest.raises(ValueError), agent.span("failing-run", None):
        raise ValueError("tool crashed")


def test_runs_costs_and_parent_links_arrive(server: Any) -> None:
    agent = observe(server, "sdk-tester", "sdk-real")
    workload(agent)
    assert agent.flush_sync(HANG_GUARD)
    profile = server.get("/api/agents/sdk-tester/sdk-real")
    assert (profile["runs"], profile["successes"], profile["failures"]) == (3, 2, 1)
    assert profile["cost_usd_total"] == pytest.approx(1.0)
    path = "/api/agents/sdk-tester/sdk-real/tasks"
    owner = server.create_key("sdk-tester")  # outputs are the owner's until shown
    tasks = {t["name"]: t for t in server.get(path, owner)["tasks"]}
    assert set(tasks) == {"research", "sync-run", "failing-run"}, "roots"
    research_children = server.get(path, parent=tasks["research"]["task_id"])["tasks"]
    assert sorted(t["name"] for t in research_children) == ["fetch-a", "fetch-b"]
    assert [t["name"] for t in server.get(path, parent=tasks["sync-run"]["task_id"])["tasks"]] == ["sync-step"]
    assert tasks["research"]["output"] == {"answer": 42}
    assert tasks["failing-run"]["status"] == "failed"
    assert "tool crashed" in str(tasks["failing-run"]["output"])
    agent.shutdown_sync()


def test_replayed_batches_count_once(server: Any) -> None:
    key = server.create_key("sdk-replay")
    config = SenderConfig(**{**FAST.__dict__, "transport_factory": TwiceTransport})
    agent = bench.BenchAgent(key, "replayed", endpoint=server.url, sender_config=config)
    workload(agent)
    assert agent.flush_sync(HANG_GUARD)
    assert server.get("/api/agents/sdk-replay/replayed")["runs"] == 3
    agent.shutdown_sync()


def test_gzip_bodies_and_drop_counts_are_accepted(server: Any) -> None:
    agent = observe(server, "sdk-gzip", "gzipped")
    agent._sender._count_dropped_back(7)  # as if the queue had overflowed earlier
    with agent.span("big", {"text": "lorem ipsum " * 3000}) as t:
        t.log("size", 36000)
    assert agent.flush_sync(HANG_GUARD)
    events = server.get("/api/agents/sdk-gzip/gzipped/events", limit=10)["events"]
    assert {e["kind"] for e in events} >= {"task.start", "task.end"}
    assert server.get("/api/agents/sdk-gzip/gzipped")["runs"] == 1
    agent.shutdown_sync()


def test_process_exiting_right_after_a_task_delivers_to_the_server(server: Any, tmp_path) -> None:
    code = textwrap.dedent("""
        import bench
        agent = bench.observe(agent="exit-real")
        with agent.span("only-run") as t:
            t.log("n", 1)
    """)
    env = {**os.environ, "BENCH_KEY": server.create_key("sdk-exit"), "BENCH_ENDPOINT": server.url,
           "XDG_CONFIG_HOME": str(tmp_path)}
    result = run_python(code, env)
    assert result.returncode == 0, result.stderr
    assert server.get("/api/agents/sdk-exit/exit-real")["runs"] == 1


def test_bench_test_prints_the_profile_url(server: Any, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BENCH_KEY", server.create_key("sdk-cli"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert cli_main(["init", "--agent", "cli-verified"]) == 0
    capsys.readouterr()
    assert cli_main(["test", "--endpoint", server.url]) == 0
    out = capsys.readouterr().out
    assert "sdk-cli/cli-verified" in out
    assert "/u/sdk-cli/cli-verified" in out
    assert server.get("/api/agents/sdk-cli/cli-verified")["runs"] == 1


def test_a_bad_key_is_one_warning_and_never_an_exception(server: Any, caplog) -> None:
    agent = bench.BenchAgent("bk_not_a_real_key", "nobody", endpoint=server.url, sender_config=FAST)
    for i in range(3):
        with agent.span(f"run{i}"):
            pass
        assert agent.flush_sync(HANG_GUARD)
    assert len([r for r in caplog.records if "401" in r.getMessage()]) == 1
    agent.shutdown_sync()


def test_nested_spans_arrive_as_one_run_tree(server: Any) -> None:
    """Spans nested three deep, the deepest failing: the run's JSON twin draws them as a tree,
    the failure flagged on every ancestor."""
    server.showing_content("sdk-tree", "sdk-tree")
    agent = observe(server, "sdk-tree", "sdk-tree")
    with agent.span("outer", {"q": 1}), agent.span("middle"), pytest.raises(KeyError), \
            agent.span("inner"):
        raise KeyError("missing page")
    with agent.span("after"):
        pass
    assert agent.flush_sync(HANG_GUARD)
    runs = server.get("/api/agents/sdk-tree/sdk-tree/runs")["runs"]
    outer = next(r for r in runs if r["name"] == "outer")
    run = server.get(f"/api/agents/sdk-tree/sdk-tree/runs/{outer['run_id']}")
    assert [(s["name"], s["depth"], s["status"], s["failed_below"]) for s in run["spans"]] == [
        ("outer", 0, "success", 1), ("middle", 1, "success", 1), ("inner", 2, "failed", 0)]
    assert "missing page" in str(run["spans"][2]["output"])
    agent.shutdown_sync()
