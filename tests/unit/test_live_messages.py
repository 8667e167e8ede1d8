"""The live feed's pure parts: who may watch, what each watcher is sent, how it is cut into
messages, when a watcher is cut off, and the signed tokens pages connect with."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest
from bench_core.accounts import signed_tokens
from bench_core.accounts.live_tokens import issue, viewer_of
from bench_core.domain.live import Channel, may_watch
from bench_core.domain.models import Agent, AgentRef
from bench_core.domain.privacy import ANONYMOUS, Viewer
from bench_core.live.lambda_push import MAX_PAYLOAD_BYTES, payloads
from bench_core.live.local import MAX_BACKLOG, TRY_AGAIN_LATER, Subscriber
from bench_core.reads.live_events import MAX_MESSAGE_BYTES, Delivery, compact, pack

SECRET = b"k" * 48


def agent(**settings: object) -> Agent:
    return Agent(login="alice", slug="bot", **settings)  # type: ignore[arg-type]


def test_channels_parse_strictly_and_cover_their_agents() -> None:
    assert Channel.parse("Alice/Bot") == Channel("alice", "bot")
    assert Channel.parse("alice") == Channel("alice", None)
    for bad in ("", "/bot", "alice/bot/x", "al ice", "alice/" + "x" * 80):
        with pytest.raises(ValueError):
            Channel.parse(bad)
    assert Channel("alice").covers(AgentRef("alice", "any"))
    assert not Channel("alice", "bot").covers(AgentRef("alice", "other"))


def test_who_may_watch_follows_the_profile_rule() -> None:
    public, private = agent(), agent(visibility="private")
    owner, other = Viewer("alice"), Viewer("bob")
    assert may_watch(Channel("alice", "bot"), public, ANONYMOUS)
    assert not may_watch(Channel("alice", "bot"), private, other)
    assert may_watch(Channel("alice", "bot"), private, owner)
    assert may_watch(Channel("alice", "new"), None, owner), "waiting for the first event"
    assert not may_watch(Channel("alice", "new"), None, ANONYMOUS)
    assert not may_watch(Channel("alice"), None, other) and may_watch(Channel("alice"), None, owner)


def test_each_audience_gets_what_privacy_allows() -> None:
    events = [{"id": "e1", "kind": "task.start", "ts": "2026-12-02T16:00:00.000Z",
               "task_id": "t", "name": "n", "input": {"q": "secret"}},
              {"id": "e2", "kind": "task.end", "ts": "2026-12-02T16:00:01.000Z", "task_id": "t",
               "status": "success", "output": "y" * 1000, "duration_ms": 1500.0}]
    hiding = Delivery(agent(hide_inputs=True), events)
    public = json.loads(hiding.for_viewer(None)[0])["events"]
    assert public[0]["input"] == "[hidden by owner]"
    assert len(public[1]["output"]) <= 241 and public[1]["duration_text"] == "1.5 s"
    assert "secret" in json.loads(hiding.for_viewer("alice")[0])["events"][0]["input"]
    assert Delivery(agent(visibility="private"), events).for_viewer("bob") is None


def test_a_batch_is_cut_into_messages_under_the_limit_in_bytes_and_in_order() -> None:
    summaries = [{"id": str(i), "output": "é…" * 120} for i in range(2000)]
    messages = pack(agent(), summaries)
    sizes = [len(m.encode()) for m in messages]
    assert len(messages) > 1 and max(sizes) <= MAX_MESSAGE_BYTES
    decoded = [json.loads(m) for m in messages]
    assert [e["id"] for d in decoded for e in d["events"]] == [str(i) for i in range(2000)]
    assert "stats" in decoded[-1] and all("stats" not in d for d in decoded[:-1])


def test_a_watcher_that_falls_behind_is_cut_off() -> None:
    async def test() -> None:
        subscriber = Subscriber(Channel("alice", "bot"), None)
        subscriber.offer(["m"] * MAX_BACKLOG)
        assert subscriber.close_code is None
        subscriber.offer(["one too many"])
        assert subscriber.close_code == TRY_AGAIN_LATER
        assert subscriber.queue.qsize() == 1 and subscriber.queue.get_nowait() is None
        subscriber.offer(["after"])
        assert subscriber.queue.empty()

    asyncio.run(test())


def test_live_tokens_name_one_channel_and_one_viewer() -> None:
    channel = Channel("alice", "bot")
    now = datetime(2026, 12, 2, 16, tzinfo=UTC)
    token = issue(SECRET, channel, "alice", now=now)
    assert viewer_of(SECRET, token, channel, now=now) == "alice"
    assert viewer_of(SECRET, token, channel, now=now + timedelta(seconds=299)) == "alice"
    assert viewer_of(SECRET, token, channel, now=now + timedelta(seconds=300)) is None, "expired"
    assert viewer_of(SECRET, token, Channel("alice", "other"), now=now) is None
    assert viewer_of(b"other secret" * 4, token, channel, now=now) is None
    assert viewer_of(SECRET, issue(SECRET, channel, None, now=now), channel, now=now) is None
    session_like = signed_tokens.sign(SECRET, "session", {"c": "alice/bot", "v": "alice"}, 60, now=now)
    assert viewer_of(SECRET, session_like, channel, now=now) is None, "tokens are bound to their purpose"
    expired = signed_tokens.sign(SECRET, "live", {"c": "alice/bot", "v": "alice"}, 60,
                                 now=now - timedelta(minutes=2))
    assert viewer_of(SECRET, expired, channel, now=now) is None


def test_a_batch_handed_to_the_push_function_is_sent_as_the_whole_batch_would_be() -> None:
    """What travels to the push function (`compact`, then `payloads`) makes the same messages
    for every audience as the events themselves, whatever the owner hides."""
    bodies = [{"id": f"e{i}", "kind": "task.end", "ts": "2026-12-02T16:00:00.000Z",
               "task_id": f"t{i}", "name": "search", "status": "success", "duration_ms": 12,
               "cost_usd": 0.01, "input": {"question": "q" * 600}, "output": "a" * 500,
               "data": {"tokens": 3, "note": "é" * 300}, "metadata": {"big": "m" * 5000},
               "cost_breakdown": {"input": 0.001}} for i in range(300)]
    bodies.append({"id": "none", "kind": "custom", "ts": "2026-12-02T16:00:00.000Z",
                   "input": None})
    for settings in ({}, {"hide_inputs": True}, {"hide_outputs": True}, {"visibility": "private"}):
        sent = [json.loads(p) for p in payloads(AgentRef("alice", "bot"),
                                                [compact(b) for b in bodies])]
        assert all(p["agent"] == "alice/bot" for p in sent)
        travelled = [e for p in sent for e in p["events"]]
        whole, compacted = Delivery(agent(**settings), bodies), Delivery(agent(**settings),
                                                                         travelled)
        assert compacted.owner == whole.owner
        assert compacted.public == whole.public


def test_a_batch_too_big_for_one_invoke_goes_in_parts_under_the_limit_in_order() -> None:
    bodies = [{"id": f"e{i}", "kind": "custom", "ts": "2026-12-02T16:00:00.000Z",
               "data": {"blob": "é" * 3000}} for i in range(400)]
    parts = payloads(AgentRef("alice", "bot"), bodies)
    assert len(parts) > 1 and max(len(p) for p in parts) <= MAX_PAYLOAD_BYTES
    assert [e["id"] for p in parts for e in json.loads(p)["events"]] == [f"e{i}" for i in range(400)]
