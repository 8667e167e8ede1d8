"""Two front ends that make every visitor look local to the server behind them, as a
self-hoster's would: a TCP forwarder on the same machine (socat, stunnel, `ssh -R`: bytes
copied both ways, the visitor's own `Host` arriving untouched) and a reverse proxy that adds no
forwarding header (nginx's plain `proxy_pass`: `Host` set to the upstream's address). Either
way the server sees a loopback peer, a loopback `Host` and no `X-Forwarded-*`."""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                        "te", "trailers", "transfer-encoding", "upgrade", "host",
                        "content-length"})


def _address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 80


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    """Copy until `source` ends, then end `sink`'s writing side."""
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


@contextlib.contextmanager
def tcp_forwarder(upstream: str) -> Iterator[str]:
    """A loopback port whose connections are copied byte for byte to `upstream`; its URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    target = _address(upstream)
    connections: list[socket.socket] = []

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                visitor, _ = listener.accept()
                server = socket.create_connection(target)
                connections.extend((visitor, server))
                for source, sink in ((visitor, server), (server, visitor)):
                    threading.Thread(target=_pipe, args=(source, sink), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()
        for sock in connections:
            sock.close()


def _handler(upstream: str) -> type[BaseHTTPRequestHandler]:
    host, port = _address(upstream)

    class Relay(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            return

        def relay(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {name: value for name, value in self.headers.items()
                       if name.lower() not in HOP_BY_HOP}
            headers["Host"] = f"{host}:{port}"  # nginx's default: the upstream's own address
            connection = http.client.HTTPConnection(host, port, timeout=60)
            try:
                connection.request(self.command, self.path, body=body, headers=headers)
                answer = connection.getresponse()
                data = answer.read()
                self.send_response(answer.status, answer.reason)
                for name, value in answer.getheaders():
                    if name.lower() not in HOP_BY_HOP:
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            finally:
                connection.close()

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = relay  # noqa: N815 - http.server

    return Relay


@contextlib.contextmanager
def headerless_proxy(upstream: str) -> Iterator[str]:
    """A reverse proxy to `upstream` that re-sends each request without adding any
    forwarding header; its URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(upstream))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
