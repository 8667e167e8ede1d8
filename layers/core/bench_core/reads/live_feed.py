"""The live feed, one use case over any transport: who may watch a channel, what each watcher
of a new batch is sent (the owner's version or everyone else's, through the privacy gate:
`live_events.Delivery`), and which connections close because their viewer may no longer watch
or the grant behind them has ended (`accounts.live_grants`).

The transports (`ports.live.LiveTransport`: the local server's WebSockets, API Gateway's
connections) only say who is connected and carry what this decides. Ingest hands each stored
batch to `publish`: with nobody watching that is one look at the transport's connections; else
the push runs here, or, given a `PushDispatch` (AWS), in a function of its own, so the ingest
answer never waits on watchers' connections.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol

from ..accounts import live_grants
from ..domain.live import Channel, may_watch
from ..domain.models import Agent, AgentRef, WireEvent
from ..domain.privacy import Viewer
from ..log import logger
from ..ports.live import LiveTransport, Parcel, PushDispatch, W
from ..ports.services import WithAccounts, WithAgents, WithClock
from .live_events import Delivery, compact, event_body, hello


class FeedConcerns(WithAccounts, WithAgents, WithClock, Protocol):
    """The agents pushed about, and the grants behind connections."""


@dataclass(frozen=True)
class Admission:
    """A viewer let in to a channel, and the first message its connection is sent."""

    store: WithAgents
    channel: Channel
    agent: Agent | None
    """The watched agent (None for an owner's channel, or an agent not created yet)."""

    def hello(self) -> str:
        """What it watches and the numbers so far (an owner's channel: of every agent)."""
        if self.channel.ref is not None:
            agents = [self.agent] if self.agent else []
        else:
            agents = self.store.agents.list_agents(self.channel.login)
        return hello(self.channel.name, agents)


class LiveFeed(Generic[W]):
    """The use case (`ports.live.LiveFeed` for ingest and accounts) over one transport."""

    def __init__(self, store: FeedConcerns, transport: LiveTransport[W], *,
                 dispatch: PushDispatch | None = None) -> None:
        self.store = store
        self.transport = transport
        self.dispatch = dispatch

    def admit(self, channel: Channel, viewer: Viewer) -> Admission | None:
        """Whether `viewer` may watch `channel` (`domain.live.may_watch`, the profile's rule),
        and what it is sent first; None: refused."""
        agent = self.store.agents.get_agent(channel.ref) if channel.ref else None
        return Admission(self.store, channel, agent) if may_watch(channel, agent, viewer) else None

    async def publish(self, ref: AgentRef, events: Sequence[WireEvent | dict[str, Any]]) -> None:
        try:
            watchers = await self._watching(ref)
            if not watchers:
                return
            if self.dispatch is not None:
                bodies = [compact(event_body(e)) for e in events]
                await asyncio.to_thread(self.dispatch.dispatch, ref, bodies)
                return
            await self._push(ref, events, watchers)
        except Exception:
            logger.exception("live feed publish failed", extra={"agent": ref.path})

    async def push(self, ref: AgentRef, events: Sequence[WireEvent | dict[str, Any]]) -> None:
        """Send a batch to everyone watching `ref` now (what a dispatched push runs). Never
        raises."""
        try:
            await self._push(ref, events, await self._watching(ref))
        except Exception:
            logger.exception("live feed push failed", extra={"agent": ref.path})

    async def _watching(self, ref: AgentRef) -> list[W]:
        return [w for w in await self.transport.watchers(ref.login) if w.channel.covers(ref)]

    async def _push(self, ref: AgentRef, events: Sequence[WireEvent | dict[str, Any]],
                    watchers: list[W]) -> None:
        if not watchers:
            return
        agent = await asyncio.to_thread(self.store.agents.get_agent, ref)
        if agent is None:
            return
        delivery = Delivery(agent, events)
        granted: dict[str | None, bool] = {}
        parcels: list[Parcel[W]] = []
        for watcher in watchers:
            messages = delivery.for_viewer(watcher.viewer)
            if messages is delivery.owner:
                if watcher.grant not in granted:
                    granted[watcher.grant] = await asyncio.to_thread(
                        live_grants.still_granted, self.store, watcher.grant)
                if not granted[watcher.grant]:
                    messages = None
            parcels.append((watcher, messages))
        await self.transport.deliver(parcels)

    async def close_granted(self, login: str, grant: str) -> None:
        await self._close(login, lambda w: w.grant == grant)

    async def close_unwatchable(self, agent: Agent) -> None:
        await self._close(agent.login, lambda w: w.channel.covers(agent.ref) and not may_watch(
            w.channel, agent, _viewer(w.viewer)))

    async def _close(self, login: str, gone: Callable[[W], bool]) -> None:
        """Close `login`'s connections for which `gone` holds (only the owner's own feeds are
        indexed; anywhere else a viewer sees what anyone may)."""
        try:
            await self.transport.deliver([(w, None) for w in await self.transport.watchers(login)
                                          if gone(w)])
        except Exception:
            logger.exception("closing live connections failed", extra={"login": login})


def _viewer(viewer: Viewer | str | None) -> Viewer:
    return viewer if isinstance(viewer, Viewer) else Viewer(viewer)
