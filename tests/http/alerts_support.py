"""A webhook receiver on 127.0.0.1 for the alert tests: it checks each request's signature as
the README tells a receiver to, answers the statuses it is given in turn (then 200), and keeps
what it got."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench_core.domain.models import AgentRef, iso

from tests.conftest import RunningServer

MAX_AGE_S = 300


def verified(secret: str, header: str, body: bytes, now: float) -> bool:
    """A receiver's check of `X-Bench-Signature`: `t=...,v1=...`, HMAC-SHA256 of `{t}.` and the
    raw body, compared in constant time, `t` within five minutes."""
    parts = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    if not parts.get("t", "").isdigit() or abs(now - int(parts["t"])) > MAX_AGE_S:
        return False
    expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + body,
                        hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, parts.get("v1", ""))


@dataclass
class Receiver:
    url: str
    secret: str
    statuses: list[int] = field(default_factory=list)
    """Answered in turn, then 200."""
    got: list[dict[str, Any]] = field(default_factory=list)


@contextmanager
def receiver(secret: str = "", statuses: list[int] | None = None) -> Iterator[Receiver]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    found = Receiver(f"http://127.0.0.1:{server.server_address[1]}/hook", secret,
                     list(statuses or []))

    class Hook(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            """Quiet."""

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            signature = self.headers.get("X-Bench-Signature")
            found.got.append({
                "path": self.path, "headers": dict(self.headers), "json": json.loads(body),
                "verified": signature is not None and verified(found.secret, signature, body,
                                                               time.time())})
            status = found.statuses.pop(0) if found.statuses else 200
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

    server.RequestHandlerClass = Hook
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


LAST_HOUR = "9999-12-31T23"


def hold_looks(server: RunningServer, ref: AgentRef) -> None:
    """Take every hour's look of the agent's monitors before its runs come in, so the server's
    worker (which looks after an agent's evals, once an hour) never changes the alerts a test
    is looking at; the test looks itself (`watch_versions`)."""
    assert server.store.alerts.claim_look(ref, LAST_HOUR)


def quiet_monitors(server: RunningServer, ref: AgentRef, runs: int) -> bool:
    """Wait until the server's judge has scored the agent's `runs` (the looks held by
    `hold_looks` before they came). Whether the server judges at all (one over DynamoDB queues
    its evals for AWS's function)."""
    judges = server.services.settings.embedded_store
    deadline = time.monotonic() + 60
    while judges and ((agent := server.store.agents.get_agent(ref)) is None
                      or agent.stats.eval_count < runs):
        assert time.monotonic() < deadline, "the judge did not score the runs in 60 s"
        time.sleep(0.05)
    assert not server.store.alerts.claim_look(ref, iso(server.store.clock.now())[:13]), \
        "hold_looks first"
    return judges
