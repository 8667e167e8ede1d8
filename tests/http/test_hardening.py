"""Hostile clients against a real server on 127.0.0.1: rebound names, forged forwarding
headers, slow and vanishing clients, and the headers every answer
carries."""

from __future__ import annotations

import logging
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from bench_core.domain.hosts import parse_networks

from tests.conftest import HANG_GUARD_S, RunningServer, poll, serving, start_server
from tests.factories import batch, task_events
from tests.http.accounts_support import Browser, new_login
from tests.http.test_ingest_http import post

EVIL = "evil.example:8000"


@pytest.fixture
def server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    """A server of this test's own (rate-limit counters are per client address), with the
    settings the test's `settings` marker names."""
    marker = request.node.get_closest_marker("settings")
    running, uvicorn_server, thread = start_server(tmp_path, **{"store": "memory", **(marker.kwargs if marker else {})})
    yield running
    uvicorn_server.should_exit = True
    thread.join(timeout=10)


def raw_socket(server: RunningServer) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=HANG_GUARD_S)
    return sock


def read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


# ---- Host: DNS rebinding -------------------------------------------------------------------------


def test_every_route_refuses_a_host_it_does_not_answer_to(bench_server: RunningServer) -> None:
    for method, path in (("GET", "/"), ("GET", "/signin"), ("GET", "/dashboard"),
                         ("GET", "/leaderboard"), ("GET", "/api/leaderboard"),
                         ("POST", "/api/cli/device/code"), ("POST", "/ingest"),
                         ("GET", "/live-token?channel=x"), ("GET", "/healthz")):
        r = httpx.request(method, bench_server.url + path, headers={"Host": EVIL}, timeout=30)
        assert r.status_code == 421, (method, path, r.status_code)
        assert r.json()["detail"][0]["loc"] == ["header", "host"]
    for host in ("localhost:1", "127.0.0.1", "[::1]:8000"):
        assert httpx.get(bench_server.url + "/healthz", headers={"Host": host}).status_code == 200


def test_a_websocket_to_another_host_is_refused(bench_server: RunningServer) -> None:
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    login = new_login()  # an owner's own feed, from a page of the rebound name (its Origin)
    url = bench_server.url.replace("http://", "ws://") + f"/live/{login}"
    cookie = f"bench_session={Browser(bench_server).session_for(login)}"
    with pytest.raises(InvalidStatus), connect(url, additional_headers={
            "Host": EVIL, "Origin": f"http://{EVIL}", "Cookie": cookie}):
        pass
    with connect(url, additional_headers={"Origin": bench_server.url, "Cookie": cookie}) as ws:
        assert '"hello"' in ws.recv(timeout=30)


@pytest.mark.settings(allowed_hosts=("bench.internal",), public_url="https://bench.example.com")
def test_configured_names_are_answered_and_links_use_the_public_url(server: RunningServer
                                                                    ) -> None:
    for host in ("bench.internal", "bench.example.com", "bench.internal:8443"):
        assert httpx.get(server.url + "/healthz", headers={"Host": host}).status_code == 200
    assert httpx.get(server.url + "/healthz", headers={"Host": EVIL}).status_code == 421
    started = httpx.post(server.url + "/api/cli/device/code",
                         headers={"Host": "bench.internal"}).json()
    assert started["verification_uri_complete"].startswith("https://bench.example.com/device?")


# ---- forwarding headers and rate limits ----------------------------------------------------------


def test_x_forwarded_for_from_an_untrusted_peer_buys_no_fresh_rate_limit(server: RunningServer
                                                                        ) -> None:
    answers = [httpx.post(server.url + "/api/cli/device/code",
                          headers={"X-Forwarded-For": f"203.0.113.{i}"}).status_code
               for i in range(31)]
    assert answers[:30] == [200] * 30 and answers[30] == 429


@pytest.mark.settings(trusted_proxies=parse_networks("127.0.0.1/32"))
def test_a_trusted_proxy_names_the_client(server: RunningServer) -> None:
    def start(client: str) -> int:
        return httpx.post(server.url + "/api/cli/device/code",
                          headers={"X-Forwarded-For": f"{client}, 127.0.0.1"}).status_code

    assert [start("203.0.113.1") for _ in range(31)][-1] == 429
    assert start("203.0.113.2") == 200


# ---- headers on every answer --------------------------------------------------------------------


def test_keyed_json_is_private_and_every_answer_is_nosniff(bench_server: RunningServer) -> None:
    login = new_login()
    key = bench_server.create_key(login)
    assert post(bench_server, batch("hdr", task_events("t1")), key).status_code == 200
    path = f"/api/agents/{login}/hdr"
    for r in (httpx.get(bench_server.url + path, headers={"X-Bench-Key": key}),
              httpx.get(bench_server.url + path, headers={"Authorization": f"Bearer {key}"})):
        assert r.headers["cache-control"] == "private, no-store"
        assert "Authorization, X-Bench-Key, Cookie" in r.headers["vary"]
    anonymous = httpx.get(bench_server.url + path)
    assert "Authorization, X-Bench-Key, Cookie" in anonymous.headers["vary"]
    for address in (path, f"/u/{login}/hdr", f"/badge/{login}/hdr.svg", "/nothing-here",
                    "/static/app.css", f"/og/{login}/hdr.png"):
        r = httpx.get(bench_server.url + address)
        assert r.headers["x-content-type-options"] == "nosniff", address


def test_head_works_wherever_get_does(bench_server: RunningServer) -> None:
    login = new_login()
    key = bench_server.create_key(login)
    assert post(bench_server, batch("head", task_events("t1")), key).status_code == 200
    for address in (f"/badge/{login}/head.svg", f"/embed/{login}/head", f"/og/{login}/head.png",
                    f"/u/{login}/head", f"/api/agents/{login}/head"):
        got = httpx.get(bench_server.url + address)
        head = httpx.head(bench_server.url + address)
        assert head.status_code == got.status_code == 200, address
        assert head.content == b"" and head.headers["content-type"] == got.headers["content-type"]


def test_the_database_and_its_wal_are_private_to_their_user(tmp_path: Path) -> None:
    login = new_login()
    with serving(tmp_path) as server:
        post(server, batch("files", task_events("t1")), server.create_key(login))
        db = tmp_path / "bench.db"
        for file in (db, db.with_name("bench.db-wal")):
            assert stat.S_IMODE(file.stat().st_mode) == 0o600, file


# ---- slow and vanishing clients -----------------------------------------------------------------


def test_a_client_gone_mid_body_is_one_info_line(bench_server: RunningServer,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    for _ in range(3):
        with raw_socket(bench_server) as sock:
            sock.sendall(b"POST /ingest HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Bench-Key: bk_x\r\n"
                         b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"a")
    poll(lambda: [r for r in caplog.records if r.getMessage() == "client disconnected"],
         lambda gone: len(gone) == 3)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]


def test_half_open_connections_are_closed(bench_server: RunningServer,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from bench_core import local

    monkeypatch.setattr(local, "HEADER_DEADLINE_S", 0.5)
    sockets = [raw_socket(bench_server) for _ in range(200)]
    try:
        for sock in sockets:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        for sock in sockets:
            assert read_all(sock) == b""  # closed by the server, nothing answered
    finally:
        for sock in sockets:
            sock.close()
    assert httpx.get(bench_server.url + "/healthz").status_code == 200


def test_a_body_that_stops_coming_is_408(bench_server: RunningServer,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from bench_core.http import guard

    monkeypatch.setattr(guard, "BODY_DEADLINE_S", 0.5)
    with raw_socket(bench_server) as sock:
        sock.sendall(b"POST /ingest HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Bench-Key: bk_x\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"a")
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:100]
