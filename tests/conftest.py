"""Shared fixtures: a real Bench server on 127.0.0.1 with its own data directory."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from bench_core.config import Settings
from bench_core.keys import new_key
from bench_core.local import create_local_app
from bench_core.services import Services


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RunningServer:
    url: str
    services: Services
    data_dir: Path

    @property
    def store(self):  # noqa: ANN201 - the Store protocol
        return self.services.store

    def create_key(self, login: str, agent: str | None = None) -> str:
        raw, record = new_key(login, agent)
        self.store.create_key(record)
        return raw

    def get(self, path: str, key: str | None = None, **params: Any) -> Any:
        headers = {"X-Bench-Key": key} if key else {}
        response = httpx.get(self.url + path, headers=headers, params=params, timeout=10)
        response.raise_for_status()
        return response.json()


def start_server(data_dir: Path, **settings: Any) -> tuple[RunningServer, uvicorn.Server,
                                                           threading.Thread]:
    port = free_port()
    app = create_local_app(Settings(data_dir=data_dir, **settings))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error",
                                           access_log=False, lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    return RunningServer(f"http://127.0.0.1:{port}", app.state.services, data_dir), server, thread


@pytest.fixture(scope="session")
def bench_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """One real server for the whole session; tests use their own logins and slugs."""
    running, server, thread = start_server(tmp_path_factory.mktemp("bench-data"))
    yield running
    server.should_exit = True
    thread.join(timeout=10)
