"""What authorised a live-feed connection, so that ending it ends the connection too.

A connection opened with a session or a key records that grant's id (`session:<hash>`,
`key:<hash>`; never the secret itself). Signing out, revoking the key or hiding the agent
closes the connections it authorised (code 1008) at once where the feed can reach them, and
every push re-checks the grant of a connection that sees the owner's view, so a grant ended
elsewhere (another process, the CLI) stops the feed at its next message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..domain.models import Agent, KeyRecord, iso
from . import AccountConcerns, sessions

if TYPE_CHECKING:
    from ..ports.live import LiveFeed

SESSION = "session:"
KEY = "key:"


def session_grant(session: sessions.Session) -> str:
    return SESSION + sessions.grant_id(session.session_id)


def key_grant(key: KeyRecord) -> str:
    return KEY + key.key_hash


def still_granted(store: AccountConcerns, grant: str | None) -> bool:
    """Whether the session or key behind `grant` is still live (anonymous: always)."""
    if grant is None:
        return True
    if grant.startswith(SESSION):
        return store.accounts.get_grant(sessions.GRANT, grant.removeprefix(SESSION),
                                        iso(store.clock.now())) is not None
    if grant.startswith(KEY):
        record = store.accounts.key_by_hash(grant.removeprefix(KEY))
        return record is not None and record.active_at(store.clock.now())
    return False


async def signed_out(live: LiveFeed, session: sessions.Session) -> None:
    await live.close_granted(session.login, session_grant(session))


async def key_revoked(live: LiveFeed, key: KeyRecord) -> None:
    await live.close_granted(key.login, key_grant(key))


async def settings_changed(live: LiveFeed, agent: Agent) -> None:
    """After an agent's visibility changed: its watchers who may no longer see it go."""
    await live.close_unwatchable(agent)
