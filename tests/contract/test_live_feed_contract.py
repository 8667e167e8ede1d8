"""The live feed's use case over each transport: the in-process one (the local server's
WebSockets) and API Gateway's (connections in the store, pushed with post_to_connection on
moto) pass one suite. A batch
reaches every watcher of its agent or of its owner, as each viewer may see it; a watcher who
may no longer see the agent is closed; nobody watching, or a failing store, is never ingest's
problem."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from bench_core.clock import SYSTEM_CLOCK
from bench_core.domain.live import Channel, LiveConnection
from bench_core.domain.models import Agent, AgentMeta, AgentRef, iso
from bench_core.domain.privacy import Viewer
from bench_core.live.apigw import ApiGatewayTransport
from bench_core.live.local import POLICY_VIOLATION, LocalTransport, Subscriber
from bench_core.ports.store import Store
from bench_core.reads.live_feed import LiveFeed
from bench_core.store.sqlite.store import SqliteStore

from tests.factories import clean, task_events

API_GATEWAY_LIMIT = 128 * 1024
ENDPOINT = "https://abc123.execute-api.us-east-1.amazonaws.com/live"


class Feed:
    """One adapter and its watchers, as the suite drives them."""

    store: Store
    feed: LiveFeed[Any]

    def watch(self, channel: str, viewer: str | None) -> Any: ...
    def received(self, watcher: Any) -> list[dict[str, Any]]: ...
    def closed(self, watcher: Any) -> bool: ...

    def publish(self, ref: AgentRef, events: list[Any]) -> None:
        asyncio.run(self.feed.publish(ref, events))


class Local(Feed):
    def __init__(self, store: Store) -> None:
        self.store = store
        self.local = LocalTransport()
        self.feed = LiveFeed(store, self.local)

    def watch(self, channel: str, viewer: str | None) -> Subscriber:
        return self.local.subscribe(Channel.parse(channel), Viewer(viewer))

    def received(self, watcher: Subscriber) -> list[dict[str, Any]]:
        messages = []
        while not watcher.queue.empty():
            message = watcher.queue.get_nowait()
            if message is not None:
                messages.append(json.loads(message))
        return messages

    def closed(self, watcher: Subscriber) -> bool:
        return watcher.close_code == POLICY_VIOLATION


@dataclass
class ApiGateway(Feed):
    store: Store
    posted: dict[str, list[bytes]] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        client = boto3.client("apigatewaymanagementapi", endpoint_url=ENDPOINT,
                              region_name="us-east-1")
        events = client.meta.events
        events.register("provide-client-params.apigatewaymanagementapi.*", self._remember)
        events.register("after-call.apigatewaymanagementapi.PostToConnection", self._posted)
        events.register("after-call.apigatewaymanagementapi.DeleteConnection", self._deleted)
        self.feed = LiveFeed(self.store, ApiGatewayTransport(self.store, ENDPOINT, client=client))

    @staticmethod
    def _remember(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["bench_params"] = params

    def _posted(self, http_response: Any, context: dict[str, Any], **_: Any) -> None:
        """What moto accepted (after the call, so a refused post is not counted)."""
        if http_response.status_code == 200:
            params = context["bench_params"]
            self.posted.setdefault(params["ConnectionId"], []).append(params["Data"])

    def _deleted(self, http_response: Any, context: dict[str, Any], **_: Any) -> None:
        if http_response.status_code in (200, 204):
            self.deleted.append(context["bench_params"]["ConnectionId"])

    def watch(self, channel: str, viewer: str | None) -> str:
        parsed = Channel.parse(channel)
        connection_id = uuid.uuid4().hex
        self.store.accounts.add_connection(LiveConnection(
            connection_id=connection_id, login=parsed.login,
            slug=parsed.ref.slug if parsed.ref else None, viewer=viewer,
            expires_at="2999-01-01T00:00:00.000Z"))
        return connection_id

    def received(self, watcher: str) -> list[dict[str, Any]]:
        return [json.loads(data) for data in self.posted.pop(watcher, [])]

    def closed(self, watcher: str) -> bool:
        still = {c.connection_id for c in self.store.accounts.live_connections("alice", iso(SYSTEM_CLOCK.now()))}
        return watcher in self.deleted and watcher not in still


@contextmanager
def open_feed(kind: str, tmp_path: Path) -> Iterator[Feed]:
    if kind == "local":
        store = SqliteStore.open(tmp_path / "bench.db")
        yield Local(store)
        store.close()
        return
    from tests.aws.moto_table import dynamo_store

    with dynamo_store() as dynamo:  # moto: DynamoDB and API Gateway's management API
        yield ApiGateway(dynamo)


@pytest.fixture(params=["local", "apigw"])
def live(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Feed]:
    with open_feed(request.param, tmp_path) as feed:
        yield feed


def stored(live: Feed, slug: str, *events: dict[str, Any], **settings: Any) -> tuple[AgentRef, list[Any]]:
    """An agent of alice's with `events` ingested; what the feed is given to publish."""
    live.store.agents.create_agent(Agent(login="alice", slug=slug, created_at=iso(SYSTEM_CLOCK.now()), **settings))
    cleaned = clean(list(events))
    live.store.ingest.ingest("alice", AgentMeta(slug=slug), cleaned)
    return AgentRef("alice", slug), [e.body for e in cleaned]


def kinds(messages: list[dict[str, Any]]) -> list[str]:
    return [e["kind"] for m in messages for e in m["events"]]


def test_a_batch_reaches_its_agents_watchers_with_the_agents_numbers(live: Feed) -> None:
    owner, stranger = live.watch("alice/helper", "alice"), live.watch("alice/helper", None)
    elsewhere = live.watch("alice/other", "alice")
    ref, events = stored(live, "helper", *task_events("t1"))
    live.publish(ref, events)
    for watcher in (owner, stranger):
        (message,) = live.received(watcher)
        assert kinds([message]) == ["task.start", "task.end"]
        assert message["stats"]["runs"] == 1
    assert live.received(elsewhere) == []


def test_everyone_but_the_owner_gets_the_batch_without_what_the_owner_hides(live: Feed) -> None:
    owner, stranger = live.watch("alice/quiet", "alice"), live.watch("alice/quiet", "bob")
    ref, events = stored(live, "quiet", *task_events("t1", input={"secret": "question"},
                                                     output="answer"), hide_inputs=True)
    live.publish(ref, events)
    (own,), (public,) = live.received(owner), live.received(stranger)
    assert "question" in json.dumps(own)
    assert "question" not in json.dumps(public) and "answer" in json.dumps(public)


def test_the_owners_channel_carries_every_agent_of_theirs(live: Feed) -> None:
    dashboard = live.watch("alice", "alice")
    for slug in ("first", "second"):
        ref, events = stored(live, slug, *task_events(f"{slug}-1"))
        live.publish(ref, events)
    assert [m["agent"] for m in live.received(dashboard)] == ["alice/first", "alice/second"]


def test_a_watcher_who_may_no_longer_see_the_agent_is_closed(live: Feed) -> None:
    owner, stranger = live.watch("alice/closing", "alice"), live.watch("alice/closing", None)
    ref, events = stored(live, "closing", *task_events("t1"))
    live.store.agents.update_agent(ref, {"visibility": "private"})
    live.publish(ref, events)
    assert live.closed(stranger) and live.received(stranger) == []
    assert kinds(live.received(owner)) == ["task.start", "task.end"]
    assert not live.closed(owner)


def test_a_big_batch_arrives_whole_in_messages_under_the_api_gateway_limit(live: Feed) -> None:
    owner = live.watch("alice/big", "alice")
    ref, events = stored(live, "big", *[{"id": f"e{i}", "kind": "custom", "ts": "2026-12-02T16:00:00Z",
                                         "data": {"blob": "é" * 500, "n": i}} for i in range(800)])
    live.publish(ref, events)
    messages = live.received(owner)
    assert [e["id"] for m in messages for e in m["events"]] == [f"e{i}" for i in range(800)]
    assert len(messages) > 1
    assert max(len(json.dumps(m, ensure_ascii=False).encode()) for m in messages) < API_GATEWAY_LIMIT


def test_nobody_watching_an_unknown_agent_or_a_failing_store_never_raises(live: Feed) -> None:
    ref, events = stored(live, "alone", *task_events("t1"))
    live.publish(ref, events)  # nobody watches
    watcher = live.watch("alice/ghost", None)
    live.publish(AgentRef("alice", "ghost"), events)  # no such agent
    assert live.received(watcher) == []

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("store down")

    live.store.agents.get_agent = broken  # type: ignore[method-assign]
    live.store.accounts.live_connections = broken  # type: ignore[method-assign]
    live.publish(ref, events)
