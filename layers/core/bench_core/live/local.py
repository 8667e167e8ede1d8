"""The local server's live-feed transport: in-process queues between ingest and open WebSockets.

Everything runs on the server's event loop: ingest publishes from a background task after its
response is sent (`reads/live_feed.py` decides what each watcher gets), each WebSocket drains
its own queue. Publishing with nobody watching is one dictionary lookup; a watcher too slow to
keep up is cut off (its page reconnects) instead of letting its backlog grow without bound.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ..domain.live import Channel
from ..domain.privacy import Viewer

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


class LocalTransport:
    """The open WebSockets of this process, by the owner whose feeds they watch."""

    def __init__(self) -> None:
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

    async def watchers(self, login: str) -> list[Subscriber]:
        return list(self._by_login.get(login, ()))

    async def deliver(self, parcels: Sequence[tuple[Subscriber, list[str] | None]]) -> None:
        for subscriber, messages in parcels:
            if messages is None:
                subscriber.close(POLICY_VIOLATION)
            else:
                subscriber.offer(messages)
