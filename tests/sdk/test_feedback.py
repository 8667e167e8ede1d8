"""``agent.feedback`` against the real Bench server (the session fixture ``bench_server``): what
people said of a run reaches it from the agent's key, in the background, once per feedback id,
and never raises; feedback given while the server is down waits in the spool for the next
process, as events do."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import textwrap
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bench
import pytest
from conftest import FAST, HANG_GUARD, run_python


def run_feedback(running: Any, login: str, slug: str, run: str) -> dict[str, Any]:
    owner = running.create_key(login)
    return running.get(f"/api/agents/{login}/{slug}/runs/{run}", owner)["feedback"]


def test_feedback_from_the_agent_reaches_its_run(server: Any,  # noqa: F811
                                                 caplog: pytest.LogCaptureFixture) -> None:
    login, slug = "u" + uuid.uuid4().hex[:10], "sdk-feedback"
    agent = bench.BenchAgent(server.create_key(login, slug), slug, endpoint=server.url,
                             sender_config=FAST)
    with agent.span("answer", {"q": "weather"}) as t:
        during = agent.feedback(thumbs="up", comment="the user said thanks")  # the current run
        run = t.task_id
    assert agent.feedback(run, 0.25, label="slow", feedback_id="fixed") == "fixed"
    assert agent.feedback(run, 0.75, feedback_id="fixed") == "fixed"  # a resend keeps the first
    assert agent.feedback(run, 1.5) is None
    assert agent.feedback(run, 0.5, thumbs="up") is None
    assert agent.feedback(run, 0.5, label="two\nlines") is None
    assert agent.feedback(score=0.5) is None  # no task running here
    assert agent.flush_sync(HANG_GUARD)

    shown = run_feedback(server, login, slug, run)
    items = {f["feedback_id"]: f for f in shown["items"]}
    assert set(items) == {during, "fixed"}
    assert (items[during]["thumbs"], items[during]["comment"], items[during]["source"]) == \
        ("up", "the user said thanks", "agent")
    assert (items["fixed"]["score"], items["fixed"]["label"]) == (0.25, "slow")
    assert "feedback not sent" in caplog.text
    agent.shutdown_sync()


@contextlib.contextmanager
def port_opened_later(upstream: str) -> Iterator[tuple[str, Any]]:
    """A loopback port that refuses connections until `open()` is called, then forwards them
    to `upstream` byte for byte: a server that is down, then back at the same address."""
    from tests.http.front_ends import _address, _pipe

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    target = _address(upstream)

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                visitor, _ = listener.accept()
                server = socket.create_connection(target)
                for source, sink in ((visitor, server), (server, visitor)):
                    threading.Thread(target=_pipe, args=(source, sink), daemon=True).start()

    def open_() -> None:
        listener.listen()
        threading.Thread(target=serve, daemon=True).start()

    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", open_
    finally:
        listener.close()


def test_feedback_given_while_the_server_is_down_is_sent_by_the_next_process(
        server: Any, tmp_path: Path) -> None:  # noqa: F811
    login, slug = "u" + uuid.uuid4().hex[:10], "sdk-feedback-spool"
    key = server.create_key(login, slug)
    spool = tmp_path / "spool"
    with port_opened_later(server.url) as (url, open_):
        env = {**os.environ, "BENCH_KEY": key, "BENCH_ENDPOINT": url,
               "BENCH_SPOOL_DIR": str(spool), "PYTHONPATH": os.pathsep.join(sys.path)}
        code = textwrap.dedent(f"""
            import bench
            agent = bench.observe(agent={slug!r})
            with agent.span("answer", {{"q": "down"}}) as t:
                print(t.task_id)
                agent.feedback(thumbs="down", label="offline", comment="said while down")
        """)
        done = run_python(code, env)
        assert done.returncode == 0, done.stderr
        run = done.stdout.strip()
        assert any(spool.iterdir()), "nothing spooled"

        open_()
        agent = bench.BenchAgent(key, slug, endpoint=url, sender_config=FAST,
                                 spool_dir=str(spool))
        with agent.span("next", None) as t:
            agent.feedback(thumbs="up")
            second = t.task_id
        assert agent.flush_sync(HANG_GUARD)
        agent.shutdown_sync()
    first = run_feedback(server, login, slug, run)["items"]
    assert [(f["thumbs"], f["label"], f["comment"]) for f in first] == \
        [("down", "offline", "said while down")]
    assert [f["thumbs"] for f in run_feedback(server, login, slug, second)["items"]] == ["up"]
