"""A real agent endpoint on 127.0.0.1 for the reuse tests, and a Bench server allowed to call
loopback addresses (the test-only setting)."""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import bench
import httpx
from bench_core.clock import SYSTEM_CLOCK
from bench_core.domain.models import Agent, iso
from bench_core.settings import ReuseSettings

from tests.conftest import RunningServer, serving

TIMEOUT_S = 3.0
"""How long the test server waits for an agent's answer: room for the stand-in's prompt answers
on a busy machine (two test workers on two cores), where 1 s was sometimes missed."""
SLOW_S = 5.0
"""How long /slow takes to answer."""


@dataclass
class AgentEndpoint:
    """What the stand-in agent saw: every request, and the secrets it verifies calls with."""

    url: str
    secrets: dict[str, str] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)


def _handler(endpoint: AgentEndpoint) -> type[BaseHTTPRequestHandler]:
    class Agent(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            """Quiet."""

        def reply(self, status: int, body: bytes, kind: str = "application/json",
                  headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            endpoint.requests.append({"path": self.path, "method": "GET",
                                      "headers": dict(self.headers), "body": b""})
            self.reply(200, json.dumps({"via": "GET"}).encode())

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            headers = dict(self.headers)
            endpoint.requests.append({"path": self.path, "method": "POST", "headers": headers,
                                      "body": body})
            path = self.path.split("?")[0]
            if path == "/echo":
                secret = endpoint.secrets.get(headers.get("X-Bench-Agent", ""), "")
                caller = bench.verify_invocation(secret, headers, body)
                if caller is None:
                    self.reply(401, b'{"error": "not signed by Bench"}')
                    return
                call = json.loads(body)
                self.reply(200, json.dumps({"caller": caller, "echo": call["input"],
                                            "skill": call["skill"]}).encode())
            elif path == "/fail":
                self.reply(500, b"kaboom: the model is down", "text/plain")
            elif path == "/slow":
                time.sleep(SLOW_S)
                self.reply(200, b'{"late": true}')
            elif path == "/text":
                self.reply(200, b"a plain answer", "text/plain; charset=utf-8")
            elif path == "/not-json":
                self.reply(200, b"{not json")
            elif path == "/big":
                self.reply(200, json.dumps({"blob": "x" * 200_000}).encode())
            elif path == "/to-private":
                self.reply(302, b"", headers={"Location": "http://10.0.0.1/steal"})
            elif path == "/to-metadata":
                self.reply(307, b"", headers={"Location": "http://169.254.169.254/latest/"})
            elif path == "/to-echo":
                self.reply(307, b"", headers={"Location": "/echo"})
            elif path == "/to-other-host":  # the same server under another name
                port = self.server.server_address[1]
                self.reply(307, b"", headers={"Location": f"http://localhost:{port}/echo"})
            elif path == "/to-get":
                self.reply(303, b"", headers={"Location": "/answer"})
            else:
                self.reply(404, b'{"error": "no such path"}')

    return Agent


def start_agent_endpoint() -> tuple[AgentEndpoint, ThreadingHTTPServer]:
    endpoint = AgentEndpoint("")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(endpoint))
    server.daemon_threads = True
    endpoint.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return endpoint, server


def serve_endpoint() -> Iterator[AgentEndpoint]:
    endpoint, server = start_agent_endpoint()
    yield endpoint
    server.shutdown()
    server.server_close()


def serve_bench(data_dir: Path) -> Iterator[RunningServer]:
    """A Bench server whose calls may reach loopback (and give up after `TIMEOUT_S`)."""
    with serving(data_dir, store="memory", reuse=ReuseSettings(
        allow_loopback=True, timeout_s=TIMEOUT_S, max_response_bytes=64 * 1024)) as running:
        yield running


def published(server: RunningServer, endpoint: AgentEndpoint, path: str = "/echo", *,
              visibility: str = "public", owner: str | None = None, slug: str = "helper",
              url: str | None = None) -> tuple[str, str, str]:
    """An agent of a new owner, published with its endpoint at `path` of the stand-in (or at
    `url`): (owner, owner key, slug); the stand-in learns its secret."""
    owner = owner or "o" + uuid.uuid4().hex[:10]
    key = server.create_key(owner)
    server.store.agents.create_agent(Agent(login=owner, slug=slug, display_name="Helper Agent",
                                           visibility=visibility, created_at=iso(SYSTEM_CLOCK.now())))
    r = httpx.put(f"{server.url}/api/agents/{owner}/{slug}/capability", headers={"X-Bench-Key": key},
                  json=card(url or endpoint.url + path), timeout=10)
    assert r.status_code == 200, r.text
    endpoint.secrets[f"{owner}/{slug}"] = r.json()["invocation_secret"]
    return owner, key, slug


def card(url: str | None, **capability: Any) -> dict[str, Any]:
    return {"capability": {"schema_version": "1", "description": "Answers questions about papers",
                           "skills": [{"id": "qa", "name": "Question answering",
                                       "description": "Answers one question", "tags": ["papers"],
                                       "input_modes": ["application/json"],
                                       "output_modes": ["application/json"],
                                       "examples": ["What is RLHF?"]}], **capability},
            "invocation": {"mode": "http", "url": url} if url else {"mode": "disabled"}}


def resolver_with(names: dict[str, list[str]]) -> Any:
    """A `socket.getaddrinfo` answering `names` from the dict and the rest as usual."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host in names:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in names[host]]
        return real(host, port, *args, **kwargs)

    return getaddrinfo
