"""Local sign-in on one machine: a one-time link with a secret in it, shown on the console of
`bench-server serve` (and by `bench-server signin-link`), the way Jupyter shows its token URL.

Whoever reads that console, or runs the CLI against the server's data directory, is the
machine's user. Nothing a visitor puts in a request stands in for the link: a forwarder on
the same machine or a proxy that adds no header makes any visitor's address and `Host` look
local, which is why neither decides.

- The secret is 256 random bits; the store keeps only its SHA-256 (as for API keys), found by
  that hash and compared in constant time. Kept in the store, a link made by one process (the
  CLI) works in another (the server).
- A link works once (a compare-and-set spends it) and for `TTL`; opening its page spends
  nothing, so a browser's prefetch or a mistyped name does not burn it. Its record outlives it
  by a day, so a late or second use can say which it was.
- Never on where the server is reachable as an https site or GitHub sign-in is set up
  (`enabled`): there, sign-in is GitHub's.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta
from urllib.parse import urlencode

from ..domain.errors import BadRequest, BenchError, Forbidden
from ..domain.models import iso
from ..settings import Settings
from . import AccountConcerns

KIND = "signin-link"
PATH = "/signin/local"
TTL = timedelta(minutes=15)
KEPT = timedelta(days=1)
"""How long a link's record stays after it was made, to tell a spent link from a forged one."""
FRESH, USED = "fresh", "used"
NEW_LINK = "Run bench-server signin-link on the machine running Bench for a new one."
OFF = "local sign-in is off on this server: sign in with GitHub"


class NotALink(BadRequest):
    """Not a link this server made (mistyped, cut short, or made up)."""


class LinkSpent(BenchError):
    """A link this server made that no longer signs anyone in: used, or expired."""

    status = 410


def enabled(settings: Settings) -> bool:
    """Whether local sign-in is on: never for an https public URL or with GitHub sign-in;
    else as BENCH_LOCAL_SIGNIN says, by default on the embedded store (one machine)."""
    accounts = settings.accounts
    if accounts.github_enabled or (settings.public_url or "").lower().startswith("https://"):
        return False
    if accounts.local_signin is not None:
        return accounts.local_signin
    return settings.embedded_store


def require_enabled(settings: Settings) -> None:
    if not enabled(settings):
        raise Forbidden(OFF)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def issue(store: AccountConcerns) -> str:
    """A new link's secret (shown once; the store keeps its hash), good for `TTL` from now."""
    now = store.clock.now()
    token = secrets.token_urlsafe(32)
    digest = _hash(token)
    store.accounts.put_grant(KIND, digest, {"hash": digest, "status": FRESH, "until": iso(now + TTL)},
                             iso(now + KEPT), iso(now))
    return token


def link(base: str, token: str) -> str:
    """The URL to open: the sign-in page at `base` with the secret."""
    return f"{base.rstrip('/')}{PATH}?{urlencode({'token': token})}"


def check(store: AccountConcerns, token: str) -> str:
    """The hash of `token` if it is a fresh link; `NotALink` or `LinkSpent` saying why not."""
    digest, now = _hash(token), iso(store.clock.now())
    record = store.accounts.get_grant(KIND, digest, now) if token else None
    if record is None or not hmac.compare_digest(str(record.get("hash")), digest):
        raise NotALink(f"This is not a sign-in link of this server. {NEW_LINK}")
    if record["status"] != FRESH:
        raise LinkSpent(f"This sign-in link has already been used. {NEW_LINK}")
    if str(record["until"]) <= now:
        raise LinkSpent(f"This sign-in link has expired (links work for "
                        f"{int(TTL.total_seconds() // 60)} minutes). {NEW_LINK}")
    return digest


def redeem(store: AccountConcerns, token: str) -> None:
    """Spend a fresh link, exactly once however many try at the same time."""
    digest = check(store, token)
    now = iso(store.clock.now())
    if not store.accounts.update_grant(KIND, digest, {"status": FRESH}, {"status": USED, "used_at": now},
                                       now):
        raise LinkSpent(f"This sign-in link has already been used. {NEW_LINK}")
