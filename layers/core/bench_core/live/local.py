"""The local server's live feed: in-process pub/sub between ingest and open WebSockets.

Everything runs on the server's event loop: ingest publishes from a background task after its
response is sent, each WebSocket drains its own queue. Publishing with nobody watching is one
dictionary lookup; a watcher too slow to keep up is cut off (its page reconnects) instead of
letting its backlog grow without bound.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool

from ..domain.live import Channel, may_watch
from ..domain.models import Agent, AgentRef
from ..domain.privacy import Viewer
from ..log import logger

if TYPE_CHECKING:
    from ..ports.live import Audiences
    from ..ports.services import WithAgents

MAX_BACKLOG = 256
"""Messages a watcher may have waiting before it is cut off as too slow."""


TRY_AGAIN_LATER = 1013
"""WebSocket close code for a watcher cut off as too slow: its page reconnects."""
POLICY_VIOLATION = 1008
"""WebSocket close code for a watcher no longer allowed (the agent went private): no retry."""


class Subscriber:
    """One open WebSocket: what it watches, who it is, and its queue of messages to send.
    A None in the queue means "closed by the feed", with `close_code` saying why."""

    def __init__(self, channel: Channel, viewer: Viewer, grant: str | None = None) -> None:
        self.channel = channel
        self.viewer = viewer
        self.grant = grant
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self.close_code: int | None = None

    def offer(self, messages: list[str]) -> None:
        if self.close_code is not None:
            return
        if self.queue.qsize() + len(messages) > MAX_BACKLOG:
            self.close(TRY_AGAIN_LATER)
            return
        for message in messages:
            self.queue.put_nowait(message)

    def close(self, code: int) -> None:
        self.close_code = code
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queue.put_nowait(None)


class LocalFeed:
    def __init__(self, store: WithAgents, audiences: Audiences) -> None:
        self.store = store
        self.audiences = audiences
        self._by_login: dict[str, set[Subscriber]] = {}

    def subscribe(self, channel: Channel, viewer: Viewer, grant: str | None = None) -> Subscriber:
        subscriber = Subscriber(channel, viewer, grant)
        self._by_login.setdefault(channel.login, set()).add(subscriber)
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        watchers = self._by_login.get(subscriber.channel.login)
        if watchers is not None:
            watchers.discard(subscriber)
            if not watchers:
                del self._by_login[subscriber.channel.login]

    def watchers(self, ref: AgentRef) -> list[Subscriber]:
        return [s for s in self._by_login.get(ref.login, ()) if s.channel.covers(ref)]

    async def publish(self, ref: AgentRef, events: Sequence[Any]) -> None:
        try:
            watchers = self.watchers(ref)
            if not watchers:
                return
            agent = await run_in_threadpool(self.store.agents.get_agent, ref)
            if agent is None:
                return
            delivery = self.audiences.messages(agent, events)
            for subscriber in watchers:
                messages = delivery.for_viewer(subscriber.viewer)
                if messages is delivery.owner and not await run_in_threadpool(
                        self.audiences.still_granted, subscriber.grant):
                    messages = None
                if messages is None:
                    subscriber.close(POLICY_VIOLATION)
                else:
                    subscriber.offer(messages)
        except Exception:
            logger.exception("live feed publish failed", extra={"agent": ref.path})

    async def close_granted(self, login: str, grant: str) -> None:
        """Every connection `grant` opened, on any feed: in one process they are all at hand."""
        for watchers in list(self._by_login.values()):
            for subscriber in list(watchers):
                if subscriber.grant == grant:
                    subscriber.close(POLICY_VIOLATION)

    async def close_unwatchable(self, agent: Agent) -> None:
        for subscriber in self.watchers(agent.ref):
            if not may_watch(subscriber.channel, agent, subscriber.viewer):
                subscriber.close(POLICY_VIOLATION)
