"""Shared helpers for the SDK tests: a loopback fault server and an in-memory transport.

The fault server is a real HTTP server on 127.0.0.1 (threads) that can be down, answer any
status (429 with ``Retry-After``), answer after 5 s, reset connections before or after reading
the whole request, store a batch and then reset instead of answering, refuse with 500 a batch
holding a "poison" event, or reject with 413. It records every received event by id, so tests
can check "exactly once" on the receiving side.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import socket
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import bench
import pytest
from bench._sender import SenderConfig
from bench._transport import HttpxTransport, Response, UrllibTransport

HANG_GUARD = 60.0
"""Generous upper bound for anything that should finish; only catches hangs, never timing."""

FAST = SenderConfig(flush_interval=0.05, backoff_base=0.02, backoff_cap=0.2, request_timeout=10.0)


@dataclass
class Received:
    """One request as the server saw it."""

    at: float
    headers: dict[str, str]
    raw: bytes
    body: dict[str, Any]


@dataclass
class FaultServer:
    """A loopback ingest sink whose ``mode`` the test switches at will."""

    mode: str = "ok"
    retry_after: str = "1"
    slow_seconds: float = 5.0
    max_events: Optional[int] = None
    requests: list[Received] = field(default_factory=list)
    attempts: int = 0
    attempt_times: list[float] = field(default_factory=list)
    held: int = 0
    responses_sent: int = 0
    events: dict[str, dict[str, Any]] = field(default_factory=dict)
    id_counts: Counter[str] = field(default_factory=Counter)
    dropped_reported: int = 0
    device_codes: dict[str, Optional[str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: Optional[ThreadingHTTPServer] = None
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # ── lifecycle ──
    def start(self) -> None:
        sink = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                sink._handle(self)

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def down(self) -> None:
        """Refuse connections (nothing listens on the port) until :meth:`up`."""
        self.stop()

    def up(self) -> None:
        self.mode = "ok"
        if self._server is None:
            self.start()

    # ── request handling ──
    def _reply(self, handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any], **headers: str) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            handler.send_header(name.replace("_", "-"), value)
        handler.end_headers()
        handler.wfile.write(data)
        with self._lock:
            self.responses_sent += 1

    @staticmethod
    def _reset(handler: BaseHTTPRequestHandler) -> None:
        """Close with a TCP reset: the client's request is cut off, no answer."""
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        handler.close_connection = True
        handler.connection.close()

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        mode = self.mode
        length = int(handler.headers.get("Content-Length", 0))
        if mode == "cut":  # mid-request: half the body read, then the connection is gone
            handler.rfile.read(length // 2)
            with self._lock:
                self.attempts += 1
            return self._reset(handler)
        raw = handler.rfile.read(length)
        with self._lock:
            self.attempts += 1
            self.attempt_times.append(time.monotonic())
        if handler.path.startswith("/api/cli/device"):
            return self._device(handler, json.loads(raw or b"{}"))
        if mode == "reset":
            return self._reset(handler)
        if mode == "429":
            return self._reply(handler, 429, {"error": "quota", "detail": []}, Retry_After=self.retry_after)
        if mode == "400":
            return self._reply(handler, 400, {"error": "invalid batch", "detail": ["events.0.kind"]})
        if mode.isdigit():
            return self._reply(handler, int(mode), {"error": f"status {mode}", "detail": []})
        if mode == "slow":
            with self._lock:
                self.held += 1
            time.sleep(self.slow_seconds)
        text = gzip.decompress(raw) if handler.headers.get("Content-Encoding") == "gzip" else raw
        body = json.loads(text)
        if "events" not in body:
            return self._reply(handler, 422, {"error": "invalid ingest batch", "detail": []})
        if self.max_events is not None and len(body["events"]) > self.max_events:
            return self._reply(handler, 413, {"error": "too large", "detail": []})
        if mode == "poison" and any((e.get("data") or {}).get("poison") for e in body["events"]):
            return self._reply(handler, 500, {"error": "internal", "detail": []})
        self._store(body, handler.headers, raw)
        if mode == "unanswered":  # stored, but the answer never reaches the client
            return self._reset(handler)
        slug = body.get("agent_slug")
        self._reply(handler, 200, {
            "accepted": len(body["events"]), "agent": f"tester/{slug}", "url": f"{self.url}/u/tester/{slug}",
        })

    def _store(self, body: dict[str, Any], headers: Any, raw: bytes) -> None:
        with self._lock:
            self.requests.append(Received(time.monotonic(), dict(headers), raw, body))
            for event in body["events"]:
                self.id_counts[event["id"]] += 1
                self.events.setdefault(event["id"], event)
            self.dropped_reported += body.get("dropped", 0)

    def _device(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        """A fake of the server's device login, approved as soon as it is polled twice."""
        if handler.path == "/api/cli/device/code":
            code = f"dev{len(self.device_codes)}"
            self.device_codes[code] = None
            return self._reply(handler, 200, {
                "device_code": code, "user_code": "ABCD-EFGH", "verification_uri": f"{self.url}/device",
                "verification_uri_complete": f"{self.url}/device?code=ABCD-EFGH", "interval": 0, "expires_in": 60,
            })
        code = body.get("device_code")
        if code not in self.device_codes:
            return self._reply(handler, 400, {"error": "invalid_grant", "detail": []})
        if self.device_codes[code] is None:
            self.device_codes[code] = "pending"
            return self._reply(handler, 400, {"error": "authorization_pending", "detail": []})
        return self._reply(handler, 200, {"key": "bk_from_device_login", "login": "tester"})

    # ── assertions helpers ──
    def unique_events(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.events.values())

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.unique_events() if e["kind"] == kind]

    def tasks(self) -> dict[str, dict[str, Any]]:
        """task_id -> end event."""
        return {e["task_id"]: e for e in self.of_kind("task.end")}

    def wait_for(self, predicate: Callable[[], bool]) -> None:
        deadline = time.monotonic() + HANG_GUARD
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError("condition not reached (hang guard)")
            time.sleep(0.01)


@pytest.fixture(autouse=True)
def spool_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's own spool (``BENCH_SPOOL_DIR``, inherited by the processes it starts): never
    the user's cache directory, never another test's files."""
    directory = tmp_path / "spool"
    monkeypatch.setenv("BENCH_SPOOL_DIR", str(directory))
    return directory


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project directory, the current one, with no BENCH_* settings and its own config
    directory (where `bench login` keeps keys)."""
    root = tmp_path / "proj"
    root.mkdir()
    monkeypatch.chdir(root)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    for name in ("BENCH_KEY", "BENCH_AGENT", "BENCH_ENDPOINT", "BENCH_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    return root


@pytest.fixture
def sink() -> Iterator[FaultServer]:
    server = FaultServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture(params=["urllib", "httpx"])
def transport_factory(request: pytest.FixtureRequest) -> Callable[[], Any]:
    return {"urllib": UrllibTransport, "httpx": HttpxTransport}[request.param]


class MemoryTransport:
    """An in-memory server: answers 200 and keeps the decoded bodies (for non-network tests)."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.raw: list[bytes] = []

    def __call__(self) -> MemoryTransport:
        return self

    def post(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> Response:
        text = gzip.decompress(body) if headers.get("Content-Encoding") == "gzip" else body
        self.raw.append(text)
        self.bodies.append(json.loads(text))
        return Response(200, None, b'{"accepted": 1}')

    def close(self) -> None:
        pass

    @property
    def events(self) -> list[dict[str, Any]]:
        return [e for b in self.bodies for e in b["events"]]

    def kind(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["kind"] == kind]

    def ends(self) -> dict[str, dict[str, Any]]:
        """task name -> end event (names are unique within a test)."""
        return {e["name"]: e for e in self.kind("task.end")}


@pytest.fixture
def memory() -> MemoryTransport:
    return MemoryTransport()


@pytest.fixture
def make_agent(memory: MemoryTransport) -> Iterator[Callable[..., bench.BenchAgent]]:
    """Agents that deliver into ``memory`` unless another config is passed; shut down after."""
    made: list[bench.BenchAgent] = []

    def make(
        endpoint: Optional[str] = None,
        transport: Optional[Callable[[], Any]] = None,
        config: SenderConfig = FAST,
        **kwargs: Any,
    ) -> bench.BenchAgent:
        """Without ``endpoint`` events go to ``memory``; with one, over HTTP."""
        if endpoint is None:
            endpoint, transport = "http://127.0.0.1:9", memory
        config = dataclasses.replace(config, transport_factory=transport or UrllibTransport)
        kwargs.setdefault("api_key", "bk_test")
        kwargs.setdefault("agent", "test-agent")
        agent = bench.BenchAgent(endpoint=endpoint, sender_config=config, **kwargs)
        made.append(agent)
        return agent

    yield make
    for agent in made:
        agent.shutdown_sync(timeout=5)


def run_python(code: str, env: dict[str, str], cwd: Optional[Path] = None) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (exit hooks, import side effects, the 0.1.3 client)."""
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=HANG_GUARD,
    )


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Any:
    """The real Bench server (the session fixture ``bench_server`` in tests/conftest.py); skipped,
    with the reason, where it is not available (e.g. the SDK tested on its own)."""
    try:
        return request.getfixturevalue("bench_server")
    except pytest.FixtureLookupError:
        pytest.skip("the real server fixture `bench_server` (tests/conftest.py) is not available")
