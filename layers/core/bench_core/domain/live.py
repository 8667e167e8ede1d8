"""What a live-feed connection watches (`Channel`), what one is (`LiveConnection`), and who may
watch what (`may_watch`, through the privacy gate): values both feeds and the store share."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import NotFound
from .models import LOGIN_PATTERN, SLUG_PATTERN, Agent, AgentRef
from .privacy import Viewer, visible_agent

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
    grant: str | None = None
    """What authorised it (`accounts.live_grants`): it closes when that ends."""

    @property
    def channel(self) -> Channel:
        return Channel(self.login, self.slug)


def may_watch(channel: Channel, agent: Agent | None, viewer: Viewer) -> bool:
    """Whether `viewer` may watch `channel`. An owner's channel is the owner's alone. An
    agent's feed is anyone's if the agent is public and its owner's if private (the profile's
    rule, asked of privacy.py); before its first event it exists for its owner only, who waits
    on the setup page for that event."""
    if channel.slug is None or agent is None:
        return viewer.owns_account(channel.login)
    try:
        visible_agent(agent, viewer)
    except NotFound:
        return False
    return True
