"""A real loopback HTTP server speaking the OpenAI chat-completions protocol, scripted per test.

Each request takes the next scripted `Reply` (the last one repeats): a completion with given
text and usage, an HTTP status (429 with Retry-After, 500...), a body that is not a completion,
or a delay longer than the client's timeout. Requests are recorded for assertions.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    text: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    raw: str | None = None
    delay_s: float = 0.0
    usage: tuple[int, int] = (120, 30)


def answer(text: str, usage: tuple[int, int] = (120, 30)) -> Reply:
    return Reply(text=text, usage=usage)


def verdict(score: float, reasoning: str = "Looks right.") -> Reply:
    return answer(json.dumps({"score": score, "reasoning": reasoning}))


@dataclass
class FakeOpenAI:
    url: str
    replies: list[Reply]
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies[:] = list(replies)
            self.requests.clear()
            self.headers.clear()

    def next_reply(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path != "/v1/chat/completions":
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            reply = fake.next_reply(body, {k.lower(): v for k, v in self.headers.items()})
            if reply.delay_s:
                time.sleep(reply.delay_s)
            if reply.raw is not None:
                self._send(reply.status, reply.raw)
            elif reply.status != 200:
                self._send(reply.status, {"error": {"message": "scripted failure"}}, reply.headers)
            else:
                prompt, completion = reply.usage
                self._send(200, {
                    "id": "chatcmpl-1", "object": "chat.completion", "model": body.get("model"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": reply.text}}],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                              "total_tokens": prompt + completion}})

        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = (body if isinstance(body, str) else json.dumps(body)).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def fake_openai(*replies: Reply) -> Iterator[FakeOpenAI]:
    """A running server at `fake.url` (an OpenAI-compatible base URL ending in /v1)."""
    fake = FakeOpenAI(url="", replies=list(replies) or [verdict(0.8)])
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
