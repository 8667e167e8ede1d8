"""The SDK inside a process: import, exit, fork, Lambda, environment and disabled mode."""

from __future__ import annotations

import json
import os
import sys
import textwrap

import bench
import pytest
from bench._transport import UrllibTransport
from conftest import HANG_GUARD, run_python


def clean_env(tmp_path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), BENCH_SPOOL_DIR=os.environ["BENCH_SPOOL_DIR"])
    env.update(extra)
    return env


def test_import_starts_no_thread_opens_no_socket_reads_no_file(tmp_path) -> None:
    code = textwrap.dedent("""
        import sys, threading
        seen = []
        def hook(event, args):
            if event.startswith("socket.") or event == "_thread.start_new_thread":
                seen.append(event)
            if event == "open" and isinstance(args[0], str) and not args[0].endswith((".py", ".pyc", ".so", ".pth")):
                seen.append(("open", args[0]))
        sys.addaudithook(hook)
        import bench
        agent = bench.observe(api_key="bk_x", agent="a")
        print(threading.active_count(), seen)
    """)
    result = run_python(code, clean_env(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    threads, seen = result.stdout.split(" ", 1)
    assert threads == "1"
    assert seen.strip() == "[]"


@pytest.mark.parametrize("style", ["async", "sync"])
def test_process_exiting_right_after_a_task_still_delivers_it(sink, tmp_path, style: str) -> None:
    body = {
        "async": """
            async def work(t):
                t.log("n", 1)
                return "done"
            asyncio.run(agent.task("last-words", {"i": 1}, work))
        """,
        "sync": """
            with agent.span("last-words", {"i": 1}) as t:
                t.log("n", 1)
        """,
    }[style]
    code = "import asyncio, bench\nagent = bench.observe(agent='exit-agent')\n" + textwrap.dedent(body)
    result = run_python(code, clean_env(tmp_path, BENCH_KEY="bk_exit", BENCH_ENDPOINT=sink.url))
    assert result.returncode == 0, result.stderr
    assert [e["name"] for e in sink.of_kind("task.end")] == ["last-words"]
    assert len(sink.unique_events()) == 3
    assert sink.requests[0].headers["X-Bench-Key"] == "bk_exit"


def test_exit_does_not_hang_on_a_dead_server(tmp_path) -> None:
    code = "import bench\nagent = bench.observe(agent='a')\nagent.event('x', 1)\n"
    result = run_python(code, clean_env(tmp_path, BENCH_KEY="bk", BENCH_ENDPOINT="http://127.0.0.1:9"))
    assert result.returncode == 0
    assert "Traceback" not in result.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_sends_its_own_events(make_agent, sink) -> None:
    agent = make_agent(endpoint=sink.url, transport=UrllibTransport)
    agent.event("parent-before-fork", None)
    pid = os.fork()
    if pid == 0:
        try:
            agent.event("child", None)
            os._exit(0 if agent.flush_sync(HANG_GUARD) else 1)
        finally:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert agent.flush_sync(HANG_GUARD)
    kinds = sorted(e["kind"] for e in sink.unique_events())
    assert kinds == ["child", "parent-before-fork"]


def test_lambda_handler_flushes_before_returning(make_agent, sink) -> None:
    agent = make_agent(endpoint=sink.url, transport=UrllibTransport, flush_interval_ms=60_000)

    @bench.lambda_handler(agent)
    def handler(event, context):
        with agent.span("invoke", event) as t:
            t.log("records", len(event["Records"]))
        return {"statusCode": 200}

    assert handler({"Records": [1, 2]}, None) == {"statusCode": 200}
    assert [e["kind"] for e in sorted(sink.unique_events(), key=lambda e: e["ts"])][0] == "task.start"
    assert len(sink.unique_events()) == 3, "delivered before the handler returned"

    @bench.lambda_handler(agent)
    def failing(event, context):
        agent.event("about-to-fail", None)
        raise ValueError("bad event")

    with pytest.raises(ValueError):
        failing({}, None)
    assert len(sink.of_kind("about-to-fail")) == 1


def test_disabled_sdk_is_a_no_op(monkeypatch, sink) -> None:
    monkeypatch.setenv("BENCH_DISABLED", "1")
    agent = bench.observe(api_key="bk", agent="a", endpoint=sink.url)

    async def work(t):
        t.log("x", 1)
        t.cost(1)
        return 7

    import asyncio

    assert asyncio.run(agent.task("t", None, work)) == 7
    with agent.span("s") as t:
        t.log("y", 2)
    agent.event("e", None)
    assert agent.flush_sync() and agent.shutdown_sync()
    assert agent._sender is None
    assert sink.attempts == 0


def test_missing_key_warns_and_disables(monkeypatch, tmp_path, caplog) -> None:
    monkeypatch.delenv("BENCH_KEY", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    agent = bench.observe(agent="a")
    with agent.span("s"):
        pass
    assert "no api_key" in caplog.text
    assert repr(agent) == "<BenchAgent 'a' disabled>"


def test_settings_come_from_the_environment_and_files(monkeypatch, tmp_path, sink) -> None:
    from bench._credentials import store_key

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.delenv("BENCH_KEY", raising=False)
    monkeypatch.delenv("BENCH_AGENT", raising=False)
    monkeypatch.setenv("BENCH_ENDPOINT", sink.url + "/ingest/")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bench.agent.json").write_text(json.dumps({"slug": "from-manifest"}))
    store_key(sink.url, "bk_from_login", "tester")
    agent = bench.observe()
    agent.event("hello", None)
    assert agent.flush_sync(HANG_GUARD)
    request = sink.requests[0]
    assert request.body["agent_slug"] == "from-manifest"
    assert request.headers["X-Bench-Key"] == "bk_from_login"
    agent.shutdown_sync()

    monkeypatch.setenv("BENCH_KEY", "bk_env")
    monkeypatch.setenv("BENCH_AGENT", "from-env")
    agent = bench.observe(endpoint=sink.url)
    agent.event("hello", None)
    assert agent.flush_sync(HANG_GUARD)
    assert sink.requests[1].body["agent_slug"] == "from-env"
    assert sink.requests[1].headers["X-Bench-Key"] == "bk_env"
    agent.shutdown_sync()


def test_default_endpoint_is_the_local_server_or_the_one_logged_in_to(monkeypatch, tmp_path) -> None:
    from bench._config import base_url
    from bench._credentials import store_key

    monkeypatch.delenv("BENCH_ENDPOINT", raising=False)
    monkeypatch.delenv("BENCH_KEY", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert base_url() == "http://127.0.0.1:8000"
    assert base_url("https://bench.example.org/") == "https://bench.example.org"
    assert base_url("https://bench.example.org/ingest") == "https://bench.example.org"
    store_key("https://bench.example.org", "bk_saved", "tester")
    store_key("https://other.example.org", "bk_other", "tester")
    assert base_url() == "https://other.example.org", "the last login's server"
    assert base_url(key="bk_given") == "http://127.0.0.1:8000", "a given key may be another server's"
    monkeypatch.setenv("BENCH_KEY", "bk_env")
    assert base_url() == "http://127.0.0.1:8000"


def test_python_39_syntax_only() -> None:
    """The package must import on 3.9: no 3.10+ syntax outside annotations."""
    import ast
    from pathlib import Path

    for path in Path(bench.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text(), feature_version=(3, 9))
        assert tree is not None, path
    assert sys.version_info >= (3, 9)
