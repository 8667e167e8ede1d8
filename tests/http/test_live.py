"""The local live feed over real WebSockets: what reaches whom, how fast, and how big."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import bench
import httpx
import pytest
import websockets
from bench_core.domain.models import KeyRecord
from bench_core.reads.live_events import MAX_MESSAGE_BYTES
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.conftest import RunningServer
from tests.factories import batch, ev, task_events
from tests.http.accounts_support import Browser

API_GATEWAY_LIMIT = 128 * 1024


def run(test: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(test())


def watch(server: RunningServer, channel: str, browser: Browser | None = None,
          origin: str | None = None) -> Any:
    """Open the feed as a page of `browser` (signed in or not) would."""
    headers = {"Origin": origin or server.url}
    if browser is not None and browser.session_cookie:
        headers["Cookie"] = f"bench_session={browser.session_cookie}"
    ws_url = server.url.replace("http://", "ws://") + f"/live/{channel}"
    return websockets.connect(ws_url, additional_headers=headers, max_size=None)


async def next_events(ws: Any, timeout: float = 10) -> dict[str, Any]:
    """The next message carrying events (hello messages are skipped)."""
    while True:
        message = json.loads(await asyncio.wait_for(ws.recv(), timeout))
        if message["type"] == "events":
            return message


async def post(server: RunningServer, key: str, body: dict[str, Any]) -> None:
    async with httpx.AsyncClient() as client:
        r = await client.post(server.url + "/ingest", json=body, headers={"X-Bench-Key": key},
                              timeout=60)
        assert r.status_code == 200, r.text


def owner_with_agent(server: RunningServer, slug: str, **settings: str) -> tuple[Browser, str, str]:
    browser = Browser(server)
    login = browser.sign_in()
    return browser, login, browser.new_agent(slug, **settings)


def test_a_watcher_receives_what_the_sdk_sends_within_a_second(
        bench_server: RunningServer) -> None:
    browser, login, key = owner_with_agent(bench_server, "live-sdk")

    def send_with_the_sdk() -> None:
        agent = bench.observe(api_key=key, agent="live-sdk", endpoint=bench_server.url)
        with agent.span("answer", {"question": "live?"}) as t:
            t.set_output("yes")
        assert agent.flush_sync(10)

    async def test() -> None:
        async with watch(bench_server, f"{login}/live-sdk", browser) as ws:
            hello = json.loads(await ws.recv())
            assert hello["type"] == "hello" and hello["channel"] == f"{login}/live-sdk"
            await asyncio.to_thread(send_with_the_sdk)
            seen: list[dict[str, Any]] = []
            while not any(e["kind"] == "task.end" for e in seen):
                seen += (await next_events(ws, timeout=1.0))["events"]
            end = next(e for e in seen if e["kind"] == "task.end")
            assert end["name"] == "answer" and end["status"] == "success"
            assert end["output"] == "yes"

    run(test)


def test_a_public_feed_leaves_out_what_the_owner_hides(bench_server: RunningServer) -> None:
    owner, login, key = owner_with_agent(bench_server, "hiding", hide_inputs="on")

    async def test() -> None:
        async with watch(bench_server, f"{login}/hiding") as anonymous, \
                watch(bench_server, f"{login}/hiding", owner) as mine:
            await post(bench_server, key, batch("hiding", task_events(
                "t1", input={"secret": "the question"}, output="the answer")))
            public = (await next_events(anonymous))["events"]
            own = (await next_events(mine))["events"]
            start = next(e for e in public if e["kind"] == "task.start")
            assert start["input"] == "[hidden by owner]"
            assert "the question" not in json.dumps(public)
            assert "the answer" in json.dumps(public), "outputs are not hidden"
            assert "the question" in next(e for e in own if e["kind"] == "task.start")["input"]

    run(test)


def test_a_private_feed_reaches_its_owner_only(bench_server: RunningServer) -> None:
    owner, login, key = owner_with_agent(bench_server, "private-feed", visibility="private")
    stranger = Browser(bench_server)
    stranger.sign_in()
    channel = f"{login}/private-feed"
    assert Browser(bench_server).get("/live-token", channel=channel).status_code == 404
    assert stranger.get("/live-token", channel=channel).status_code == 404
    assert owner.get("/live-token", channel=channel).json()["url"].endswith(f"/live/{channel}")

    async def test() -> None:
        for who in (None, stranger):
            with pytest.raises(InvalidStatus) as refused:
                async with watch(bench_server, channel, who):
                    pass
            assert refused.value.response.status_code == 403
        async with watch(bench_server, channel, owner) as mine:
            await post(bench_server, key, batch("private-feed", task_events("t1")))
            assert len((await next_events(mine))["events"]) == 2

    run(test)


def test_a_feed_made_private_drops_its_public_watchers(bench_server: RunningServer) -> None:
    owner, login, key = owner_with_agent(bench_server, "going-private")

    async def test() -> None:
        async with watch(bench_server, f"{login}/going-private") as anonymous, \
                watch(bench_server, f"{login}/going-private", owner) as mine:
            await post(bench_server, key, batch("going-private", [ev("custom")]))
            await next_events(anonymous)
            await next_events(mine)
            owner.post("/dashboard/agents/going-private/settings", {"visibility": "private"},
                       token_from="/dashboard/agents/going-private")
            await post(bench_server, key, batch("going-private", task_events("secret-run")))
            with pytest.raises(ConnectionClosed) as closed:
                await next_events(anonymous)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
            assert any(e["task_id"] == "secret-run" for e in (await next_events(mine))["events"])

    run(test)


def test_a_handshake_from_another_site_is_refused_even_with_the_owners_cookie(
        bench_server: RunningServer) -> None:
    owner, login, _ = owner_with_agent(bench_server, "hijack")

    async def test() -> None:
        with pytest.raises(InvalidStatus):
            async with watch(bench_server, f"{login}/hijack", owner, origin="https://evil.example"):
                pass

    run(test)


def test_the_owners_channel_carries_every_agent_and_only_to_the_owner(
        bench_server: RunningServer) -> None:
    owner, login, key_a = owner_with_agent(bench_server, "first")
    key_b = owner.new_agent("second", visibility="private")
    stranger = Browser(bench_server)
    stranger.sign_in()

    async def test() -> None:
        with pytest.raises(InvalidStatus):
            async with watch(bench_server, login, stranger):
                pass
        async with watch(bench_server, login, owner) as mine:
            hello = json.loads(await mine.recv())
            assert set(hello["agents"]) == {f"{login}/first", f"{login}/second"}
            await post(bench_server, key_a, batch("first", task_events("a")))
            await post(bench_server, key_b, batch("second", task_events("b")))
            agents = {(await next_events(mine))["agent"], (await next_events(mine))["agent"]}
            assert agents == {f"{login}/first", f"{login}/second"}

    run(test)


def test_a_big_batch_arrives_whole_in_messages_under_the_api_gateway_limit(
        bench_server: RunningServer) -> None:
    owner, login, key = owner_with_agent(bench_server, "big-batch")
    events = [ev("custom", data={"blob": "x" * 4000, "n": i}) for i in range(1000)]

    async def test() -> None:
        async with watch(bench_server, f"{login}/big-batch", owner) as mine:
            await post(bench_server, key, batch("big-batch", events))
            received: list[str] = []
            sizes: list[int] = []
            while len(received) < len(events):
                raw = await asyncio.wait_for(mine.recv(), 10)
                message = json.loads(raw)
                if message["type"] == "events":
                    sizes.append(len(raw.encode()))
                    received += [e["id"] for e in message["events"]]
                    last = message
            assert received == [e["id"] for e in events]
            assert len(sizes) > 1 and max(sizes) <= MAX_MESSAGE_BYTES < API_GATEWAY_LIMIT
            assert last["stats"]["runs"] == 0 and "shown" in last["stats"]

    run(test)


def test_a_watcher_receives_the_tasks_of_an_otlp_export(bench_server: RunningServer) -> None:
    from tests.http.test_otlp_http import Trace, body

    browser, login, key = owner_with_agent(bench_server, "live-otel")
    trace = Trace()

    async def test() -> None:
        async with watch(bench_server, f"{login}/live-otel", browser) as ws:
            async with httpx.AsyncClient() as client:
                r = await client.post(
                    bench_server.url + "/v1/traces", timeout=60,
                    content=body(*(trace.span(n) for n in ("agent", "chat", "tool"))),
                    headers={"Content-Type": "application/json", "X-Bench-Key": key,
                             "X-Bench-Agent": "live-otel"})
                assert r.status_code == 200, r.text
            events = (await next_events(ws))["events"]
            ends = {e["task_id"]: e for e in events if e["kind"] == "task.end"}
            assert set(ends) == {trace.task(n) for n in ("agent", "chat", "tool")}
            assert ends[trace.task("tool")]["status"] == "failed"
            assert ends[trace.task("agent")]["name"] == "invoke_agent weather"

    run(test)


# ---- a socket lives no longer than what authorised it ------------------------------------------


async def closed_with(ws: Any) -> int | None:
    """The close code the server sent, once it closes the socket (messages before are read)."""
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            await asyncio.wait_for(ws.recv(), 60)
    return closed.value.rcvd.code if closed.value.rcvd else None


def watch_with_key(server: RunningServer, channel: str, key: str) -> Any:
    """A script's socket: a key header and no Origin, as a non-browser client sends."""
    ws_url = server.url.replace("http://", "ws://") + f"/live/{channel}"
    return websockets.connect(ws_url, additional_headers={"X-Bench-Key": key},
                              max_size=None)


def test_signing_out_closes_the_sessions_sockets(bench_server: RunningServer) -> None:
    owner, login, key = owner_with_agent(bench_server, "until-logout", visibility="private")
    other_tab = Browser(bench_server)
    other_tab.sign_in(login)

    async def test() -> None:
        async with watch(bench_server, f"{login}/until-logout", owner) as mine, \
                watch(bench_server, login, owner) as everything, \
                watch(bench_server, f"{login}/until-logout", other_tab) as other:
            await mine.recv(), await everything.recv(), await other.recv()  # hello
            assert owner.post("/logout", {}, token_from="/dashboard").status_code == 303
            assert await closed_with(mine) == 1008
            assert await closed_with(everything) == 1008
            await post(bench_server, key, batch("until-logout", [ev("custom")]))
            assert (await next_events(other))["agent"] == f"{login}/until-logout"

    run(test)


def private_agent_with_owner_key(bench_server: RunningServer, slug: str
                                 ) -> tuple[Browser, str, str, str, KeyRecord]:
    """A private agent with its agent key, plus an owner key and that key's stored record."""
    owner, login, agent_key = owner_with_agent(bench_server, slug, visibility="private")
    owner_key = bench_server.create_key(login)
    record = next(k for k in bench_server.store.accounts.list_keys(login) if k.agent_slug is None)
    return owner, login, agent_key, owner_key, record


def test_revoking_a_key_closes_the_sockets_it_opened(bench_server: RunningServer) -> None:
    owner, login, agent_key, owner_key, record = private_agent_with_owner_key(
        bench_server, "until-revoked")

    async def test() -> None:
        async with watch_with_key(bench_server, f"{login}/until-revoked", owner_key) as ws:
            assert json.loads(await ws.recv())["type"] == "hello"
            await post(bench_server, agent_key, batch("until-revoked", [ev("custom")]))
            await next_events(ws)
            revoked = owner.post("/dashboard/keys/revoke", {"key": record.key_hash},
                                 token_from="/dashboard/keys")
            assert revoked.status_code == 303
            assert await closed_with(ws) == 1008

    run(test)


def test_a_key_revoked_elsewhere_stops_the_feed_at_its_next_event(
        bench_server: RunningServer) -> None:
    _, login, agent_key, owner_key, record = private_agent_with_owner_key(
        bench_server, "revoked-by-cli")

    async def test() -> None:
        async with watch_with_key(bench_server, f"{login}/revoked-by-cli", owner_key) as ws:
            await ws.recv()
            bench_server.store.accounts.revoke_key(record.key_hash, "2026-12-03T00:00:00.000Z")  # the CLI
            await post(bench_server, agent_key, batch("revoked-by-cli", task_events("secret")))
            assert await closed_with(ws) == 1008

    run(test)


def test_an_agent_key_watches_its_own_agent_only(bench_server: RunningServer) -> None:
    owner, login, agent_key = owner_with_agent(bench_server, "scoped", visibility="private")
    owner.new_agent("sibling", visibility="private")

    async def test() -> None:
        async with watch_with_key(bench_server, f"{login}/scoped", agent_key) as ws:
            assert json.loads(await ws.recv())["type"] == "hello"
        for channel in (f"{login}/sibling", login):
            with pytest.raises(InvalidStatus):
                async with watch_with_key(bench_server, channel, agent_key):
                    pass

    run(test)


def test_making_an_agent_private_closes_its_public_sockets_at_once(
        bench_server: RunningServer) -> None:
    owner, login, _ = owner_with_agent(bench_server, "hidden-now")
    owner_key = bench_server.create_key(login)

    async def test() -> None:
        async with watch(bench_server, f"{login}/hidden-now") as anonymous, \
                watch(bench_server, f"{login}/hidden-now", owner) as mine:
            await anonymous.recv(), await mine.recv()
            r = await asyncio.to_thread(httpx.patch, f"{bench_server.url}/api/agents/{login}/"
                                        "hidden-now", json={"visibility": "private"},
                                        headers={"X-Bench-Key": owner_key})
            assert r.status_code == 200
            assert await closed_with(anonymous) == 1008
            await mine.ping()

    run(test)
