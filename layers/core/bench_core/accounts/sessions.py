"""Sessions: a random id in a signed cookie, and a server-side record of whose it is.

The signature turns away forged or tampered cookies without a store read; the record (kept
only as a hash of the id, like API keys) makes signing out real: deleting it ends the session
everywhere, even where a copy of the cookie lives on. A sandbox session (`/try`) is a separate
kind: it sees its sandbox agent and nothing of the dashboard.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..domain.models import iso
from ..ports.services import WithAccounts
from . import AccountConcerns
from . import signed_tokens as signing

COOKIE = "bench_session"
PURPOSE = "session"
GRANT = "session"
ACCOUNT_TTL = timedelta(days=14)
SANDBOX_TTL = timedelta(hours=24)


@dataclass(frozen=True)
class Session:
    session_id: str
    login: str
    sandbox: bool
    expires_at: datetime

    def max_age(self, now: datetime) -> int:
        """Seconds from `now` until it expires (a cookie's Max-Age)."""
        return max(0, int((self.expires_at - now).total_seconds()))


def grant_id(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def start(store: AccountConcerns, secret: bytes, login: str, *, sandbox: bool = False
          ) -> tuple[Session, str]:
    """A new session for `login` and the cookie value that carries it."""
    now = store.clock.now()
    session = Session(secrets.token_urlsafe(32), login, sandbox,
                      now + (SANDBOX_TTL if sandbox else ACCOUNT_TTL))
    until = iso(session.expires_at)
    store.accounts.put_grant(GRANT, grant_id(session.session_id),
                             {"login": login, "sandbox": sandbox, "until": until}, until, iso(now))
    cookie = signing.sign(secret, PURPOSE, session.session_id, session.max_age(now), now=now)
    return session, cookie


def load(store: AccountConcerns, secret: bytes, cookie: str) -> Session | None:
    """The live session a cookie carries; None for anything else (forged, tampered, expired,
    signed out)."""
    now = store.clock.now()
    session_id = signing.unsign(secret, PURPOSE, cookie, now=now)
    if not isinstance(session_id, str):
        return None
    record = store.accounts.get_grant(GRANT, grant_id(session_id), iso(now))
    if record is None:
        return None
    return Session(session_id, str(record["login"]), bool(record["sandbox"]),
                   datetime.fromisoformat(str(record["until"]).replace("Z", "+00:00")))


def end(store: WithAccounts, session: Session) -> None:
    store.accounts.delete_grant(GRANT, grant_id(session.session_id))
