"""Shared fixtures: a real Bench server on 127.0.0.1 with its own data directory."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from bench_core.clock import AHEAD_ENV
from bench_core.domain.keys import new_key
from bench_core.local import create_local_app, server_config
from bench_core.ports.store import Store
from bench_core.runtime.adapters import Services
from bench_core.settings import Settings


def pytest_report_header() -> list[str]:
    """Say so when the run's clock is not today's: `BENCH_CLOCK_AHEAD_DAYS=365 pytest` runs every
    server, store and handler (in this process or started by it) as if a year later, to show
    that no test depends on today's date."""
    ahead = os.environ.get(AHEAD_ENV)
    return [f"clock: {ahead} days ahead ({AHEAD_ENV})"] if ahead else []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


HANG_GUARD_S = 120


def poll(fetch: Callable[[], Any], done: Callable[[Any], bool]) -> Any:
    """`fetch()` again until `done` holds for its value, which is returned: for what a server
    does in the background. The deadline only guards against a hang."""
    deadline = time.monotonic() + HANG_GUARD_S
    while True:
        value = fetch()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting (hang guard); last: {value}")
        time.sleep(0.1)

@dataclass
class RunningServer:
    url: str
    services: Services
    data_dir: Path

    @property
    def store(self) -> Store:
        return self.services.store

    def create_key(self, login: str, agent: str | None = None) -> str:
        raw, record = new_key(login, agent, now=self.store.clock.now())
        self.store.accounts.create_key(record)
        return raw

    def showing_content(self, login: str, slug: str) -> None:
        """Set the agent up with its inputs and outputs shown (the dashboard's New agent form,
        boxes unticked), for tests that read content as anyone: a first batch would hide it."""
        from bench_core.domain.models import Agent, iso

        self.store.agents.create_agent(Agent(login=login, slug=slug,
                                             created_at=iso(self.store.clock.now())))

    def get(self, path: str, key: str | None = None, **params: Any) -> Any:
        headers = {"X-Bench-Key": key} if key else {}
        response = httpx.get(self.url + path, headers=headers, params=params, timeout=10)
        response.raise_for_status()
        return response.json()


def start_server(data_dir: Path, over: Any = None, **settings: Any
                 ) -> tuple[RunningServer, uvicorn.Server, threading.Thread]:
    """A real server on a loopback port of its own; over the store `over` (e.g. moto's
    DynamoDB) if given. The port is bound here and the socket handed to uvicorn, so no other
    process (another pytest worker) can take it between choosing and listening."""
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    port = int(listening.getsockname()[1])
    app = create_local_app(Settings(data_dir=data_dir, **settings), store=over)
    server = uvicorn.Server(server_config(app, host="127.0.0.1", port=port, log_level="error",
                                          lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    return RunningServer(f"http://127.0.0.1:{port}", app.state.services, data_dir), server, thread


@contextlib.contextmanager
def serving(data_dir: Path, over: Any = None, **settings: Any) -> Iterator[RunningServer]:
    """`start_server` for the length of a `with` block (a fixture's life): stopped after."""
    running, server, thread = start_server(data_dir, over, **settings)
    try:
        yield running
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests first, every other order kept: on `make test`'s two workers, which take
    files in this order (`--no-loadscope-reorder`), the longest file starts at once instead of
    running alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session", autouse=True)
def sdk_spool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The SDK's spool (what an agent could not deliver by its exit, sent by the next one) in
    the session's own directory, never the user's cache: agents the tests run, in-process or
    not, write there when their server is gone."""
    directory = tmp_path_factory.mktemp("sdk-spool")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BENCH_SPOOL_DIR", str(directory))
        yield directory


@pytest.fixture(scope="session")
def bench_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """One real server for the whole session, on the in-memory store (the tests that take it are
    about the surfaces, not a store: the contract suite holds every store to the same
    semantics); tests use their own logins and slugs."""
    with serving(tmp_path_factory.mktemp("bench-data"), store="memory") as running:
        yield running


@pytest.fixture(params=["sqlite", "dynamodb"])
def server_on_each_store(request: pytest.FixtureRequest, tmp_path: Path
                         ) -> Iterator[RunningServer]:
    """A real server per test over each Store adapter: for privacy rules, which both stores
    must keep alike."""
    if request.param == "sqlite":
        with serving(tmp_path) as running:
            yield running
        return
    from tests.aws.moto_table import dynamo_store

    with dynamo_store() as store, serving(tmp_path, over=store, store="dynamodb") as running:
        yield running


@pytest.fixture(scope="session")
def original_client_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The original system's published client, `bench-observe==0.1.3`, installed into its own
    directory: its `bench` package would clash with ours in the project's venv. Run it in a
    subprocess with PYTHONPATH set to this directory."""
    import subprocess
    import sys

    target = tmp_path_factory.mktemp("bench-observe-0.1.3")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
         "bench-observe==0.1.3"], capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        if "No matching distribution" in result.stderr or "connection" in result.stderr.lower():
            pytest.skip(f"the package registry is unreachable: {result.stderr.strip()[-300:]}")
        raise RuntimeError(f"pip install bench-observe==0.1.3 failed:\n{result.stderr}")
    return target
