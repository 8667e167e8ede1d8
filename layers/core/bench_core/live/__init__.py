"""The LiveFeed port: newly ingested events pushed to open dashboards, with no polling (SPEC 4).

- `local.LocalFeed`: in-process pub/sub behind the local server's WebSocket endpoint
  `/live/{login}/{slug}`; costs nothing while nobody watches.
- `apigw.ApiGatewayFeed`: API Gateway WebSocket connections recorded in the store (with a TTL),
  pushed to with `post_to_connection`; gone connections are removed as they are found.

A connection watches a `Channel`: one agent, or every agent of one owner (the dashboard's list).
Who may watch what is decided by `may_watch`, through the privacy gate; what each watcher is
sent is built once per batch and audience by `messages.Delivery`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import NotFound
from ..models import LOGIN_PATTERN, SLUG_PATTERN, Agent, AgentRef
from ..privacy import Viewer, visible_agent

if TYPE_CHECKING:
    from ..config import Settings
    from ..store import Store

_LOGIN = re.compile(LOGIN_PATTERN)
_SLUG = re.compile(SLUG_PATTERN)


@dataclass(frozen=True)
class Channel:
    """One agent's feed (`login/slug`), or with `slug` None every agent of `login`."""

    login: str
    slug: str | None = None

    @classmethod
    def parse(cls, text: str) -> Channel:
        """`login/slug` or `login`, lowercased; ValueError for anything else."""
        login, _, slug = text.partition("/")
        if not _LOGIN.match(login) or (slug and not _SLUG.match(slug)):
            raise ValueError(f"not a feed: {text[:100]!r}")
        return cls(login.lower(), slug.lower() or None)

    @property
    def name(self) -> str:
        return f"{self.login}/{self.slug}" if self.slug else self.login

    @property
    def ref(self) -> AgentRef | None:
        return AgentRef(self.login, self.slug) if self.slug else None

    def covers(self, ref: AgentRef) -> bool:
        return self.login == ref.login and self.slug in (None, ref.slug)


@dataclass(frozen=True)
class LiveConnection:
    """An API Gateway WebSocket connection and what it watches, as the store keeps it.
    `viewer` is the signed-in login that opened it (None: anonymous)."""

    connection_id: str
    login: str
    slug: str | None
    viewer: str | None
    expires_at: str

    @property
    def channel(self) -> Channel:
        return Channel(self.login, self.slug)


def may_watch(channel: Channel, agent: Agent | None, viewer: Viewer) -> bool:
    """Whether `viewer` may watch `channel`. An owner's channel is the owner's alone. An
    agent's feed is anyone's if the agent is public and its owner's if private (the profile's
    rule, asked of privacy.py); before its first event it exists for its owner only, who waits
    on the setup page for that event."""
    if channel.slug is None or agent is None:
        return viewer.login == channel.login
    try:
        visible_agent(agent, viewer)
    except NotFound:
        return False
    return True


class LiveFeed(Protocol):
    async def publish(self, ref: AgentRef, events: Sequence[Any]) -> None:
        """Send a summary of `events` (just stored for `ref`; wire events or stored event
        bodies) to everyone watching. Never raises: a feed problem is never ingest's problem."""
        ...


def open_live_feed(settings: Settings, store: Store) -> LiveFeed:
    """API Gateway when the settings name its management endpoint (AWS), else in-process."""
    if settings.live.endpoint:
        from .apigw import ApiGatewayFeed

        return ApiGatewayFeed(store, settings.live.endpoint)
    from .local import LocalFeed

    return LocalFeed(store)
