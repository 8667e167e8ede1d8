"""The SDK across real server restarts: `bench-server serve` is killed (-9) while an agent
process sends 30 runs, 0.5 s apart, and started again on the same data directory and port.

Every run must arrive exactly once: after a 15 s and a 60 s outage the agent (still working, not
observed, when the server comes back) delivers everything before it exits; when the outage
spans the agent's exit, what it could not deliver waits in the spool and the next agent process
delivers it. The agents run with the SDK's own settings (backoff, exit flush): nothing is shrunk.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import free_port, poll

SERVER = str(Path(sys.executable).with_name("bench-server"))
LOGIN = "restarts"
RUNS = 30

AGENT = """
import pathlib, sys, time
import bench

slug, runs, keep_working = sys.argv[1], int(sys.argv[2]), sys.argv[3]
agent = bench.observe(agent=slug)
for i in range(runs):
    with agent.span(f"run-{i:02d}", {"i": i}) as t:
        t.log("step", i)
    print(i, flush=True)
    time.sleep(0.5)
while keep_working and not pathlib.Path(keep_working).exists():  # work nobody observes
    time.sleep(0.1)
"""

pytestmark = pytest.mark.slow


def port_no_connection_takes() -> int:
    """A free port below the kernel's ephemeral range: while the server is down, no outgoing
    connection on this busy machine can be given it, so the server can listen there again."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return free_port()
    for port in random.sample(range(max(1024, low - 8000), low), 100):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    return free_port()


class Server:
    """`bench-server serve` as its own process, on one port and one data directory for life."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.port = port_no_connection_takes()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [SERVER, "serve", "--port", str(self.port), "--host", "127.0.0.1", "--data-dir", str(self.data_dir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        poll(self._health, lambda status: status == 200)

    def kill(self) -> None:
        """kill -9: no shutdown, requests in flight cut off."""
        assert self.process is not None
        self.process.kill()
        self.process.wait(30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)

    def _health(self) -> int:
        assert self.process is not None and self.process.poll() is None, "the server exited"
        try:
            return httpx.get(self.url + "/healthz", timeout=2).status_code
        except httpx.TransportError:
            return 0

    def get(self, path: str, key: str, **params: Any) -> Any:
        reply = httpx.get(self.url + path, headers={"X-Bench-Key": key}, params=params, timeout=30)
        reply.raise_for_status()
        return reply.json()

    def run_names(self, slug: str, key: str) -> list[str]:
        names: list[str] = []
        params: dict[str, Any] = {"limit": 200}
        while True:
            page = self.get(f"/api/agents/{LOGIN}/{slug}/runs", key, **params)
            names += [run["name"] for run in page["runs"]]
            if not page.get("next_cursor"):
                return sorted(names)
            params["cursor"] = page["next_cursor"]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = Server(tmp_path / "data")
    running.start()
    yield running
    running.stop()


@pytest.fixture
def key(server: Server) -> str:
    created = subprocess.run([SERVER, "keys", "create", "--login", LOGIN, "--data-dir", str(server.data_dir)],
                             capture_output=True, text=True, timeout=60, check=True)
    return created.stdout.strip()


def start_agent(server: Server, key: str, tmp_path: Path, slug: str, runs: int,
                keep_working: Path | None = None) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_")}
    env.update(BENCH_KEY=key, BENCH_ENDPOINT=server.url, BENCH_SPOOL_DIR=str(tmp_path / "spool"),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    return subprocess.Popen([sys.executable, "-c", AGENT, slug, str(runs), str(keep_working or "")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_run(agent: subprocess.Popen[str], index: int) -> None:
    assert agent.stdout is not None
    for line in agent.stdout:
        if int(line) >= index:
            return
    raise AssertionError(f"the agent stopped before run {index}: {agent.stderr.read() if agent.stderr else ''}")


def finished(agent: subprocess.Popen[str]) -> str:
    """The agent's exit (its flush included): status 0, no traceback; returns its stderr."""
    _, stderr = agent.communicate(timeout=120)
    assert agent.returncode == 0 and "Traceback" not in stderr, stderr
    return stderr


def warm_up(server: Server, key: str) -> None:
    """One ingest of another agent: the restarted server's ingest path is loaded."""
    reply = httpx.post(server.url + "/ingest", headers={"X-Bench-Key": key}, timeout=30,
                       json={"agent_slug": "warm-up", "events": []})
    assert reply.status_code < 500, reply.text


def assert_each_run_once(server: Server, key: str, slug: str, runs: int = RUNS) -> None:
    assert server.run_names(slug, key) == [f"run-{i:02d}" for i in range(runs)]
    assert server.get(f"/api/agents/{LOGIN}/{slug}", key)["runs"] == runs


@pytest.mark.parametrize("outage_s", [15, 60])
def test_a_restart_mid_run_loses_no_run(server: Server, key: str, tmp_path: Path, outage_s: int) -> None:
    """The batches that failed first used to sit in their own long backoff while newer ones went,
    and the exit flush gave up on them; the shared backoff ends with the first answer, and the
    exit's flush tries at once."""
    stop = tmp_path / "stop-working"
    agent = start_agent(server, key, tmp_path, "mid-run", RUNS, keep_working=stop)
    wait_for_run(agent, 5)
    server.kill()
    time.sleep(outage_s)
    server.start()
    warm_up(server, key)
    stop.touch()
    stderr = finished(agent)
    assert_each_run_once(server, key, "mid-run")
    assert not list((tmp_path / "spool").glob("*")), f"delivered live, nothing spooled: {stderr}"


def test_an_outage_spanning_the_agents_exit_is_delivered_by_the_next_agent(
        server: Server, key: str, tmp_path: Path) -> None:
    agent = start_agent(server, key, tmp_path, "spans-exit", RUNS)
    wait_for_run(agent, 5)
    server.kill()
    stderr = finished(agent)
    assert "spooled to" in stderr and "lost" not in stderr, stderr
    server.start()
    following = start_agent(server, key, tmp_path, "next-agent", 1)
    finished(following)
    assert_each_run_once(server, key, "spans-exit")
    assert_each_run_once(server, key, "next-agent", runs=1)
    assert not list((tmp_path / "spool").glob("*")), "the spool was delivered and removed"
