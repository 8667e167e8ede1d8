"""`bench login`: the device flow (after RFC 8628), so a key reaches a terminal without being
pasted anywhere.

The CLI asks for a code pair: a long secret `device_code` it keeps, and a short `user_code` the
user approves in a signed-in browser. The CLI polls with its device code; once approved, the
poll hands over a fresh owner key exactly once. Only hashes of device codes are stored, codes
expire after ten minutes, and polling faster than the interval is told to slow down.

States: pending → approved | denied; approved → used (the key was handed over).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..domain.errors import TooManyRequests
from ..domain.models import iso
from . import AccountConcerns, api_keys

DEVICE = "device"
USER_CODE = "user_code"
TTL = timedelta(minutes=10)
USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"
"""Consonants only (RFC 8628 6.1): no vowels to spell words, nothing to misread as a digit."""
USER_CODE_LENGTH = 8
DRAWS = 5
STARTS_PER_HOUR = 30
"""Device logins one client may start per hour: a person runs `bench login` a few times."""


@dataclass(frozen=True)
class DeviceStart:
    device_code: str
    user_code: str
    interval: int
    expires_in: int


def _hash(device_code: str) -> str:
    return hashlib.sha256(device_code.encode()).hexdigest()


def normalize_user_code(text: str) -> str | None:
    """`ABCD-EFGH` from whatever a user typed (`abcd efgh`, `ABCDEFGH`); None if it is none."""
    letters = re.sub(r"[\s-]", "", text.upper())
    if len(letters) != USER_CODE_LENGTH or any(c not in USER_CODE_ALPHABET for c in letters):
        return None
    return f"{letters[:4]}-{letters[4:]}"


def start_for(store: AccountConcerns, client: str, interval: int) -> DeviceStart:
    """`start`, at most `STARTS_PER_HOUR` times an hour from one client."""
    now = store.clock.now()
    hits = store.accounts.count_hit(f"device:{client}:{now:%Y%m%d%H}", iso(now + TTL * 6))
    if hits > STARTS_PER_HOUR:
        raise TooManyRequests("too many logins started from here; try again later",
                              headers={"Retry-After": "600"})
    return start(store, interval)


def redeem(store: AccountConcerns, device_code: str, interval: int) -> dict[str, Any]:
    """What the CLI's poll gets: a fresh owner key and its login once approved (shown this
    once), else `{"error": ...}` as RFC 8628 names it."""
    outcome, login = poll(store, device_code, interval)
    if outcome != "ok" or login is None:
        return {"error": outcome}
    raw, _ = api_keys.issue(store, login, name=f"bench login {iso(store.clock.now())[:10]}")
    return {"key": raw, "login": login}


def start(store: AccountConcerns, interval: int) -> DeviceStart:
    now = store.clock.now()
    until = iso(now + TTL)
    device_code = secrets.token_urlsafe(32)
    for _ in range(DRAWS):  # a user code in use is drawn again (20^8 of them: rare)
        letters = "".join(secrets.choice(USER_CODE_ALPHABET) for _ in range(USER_CODE_LENGTH))
        user_code = f"{letters[:4]}-{letters[4:]}"
        if store.accounts.put_grant(USER_CODE, user_code, {"device": _hash(device_code)}, until, iso(now)):
            break
    else:
        raise TooManyRequests("no free login code right now; try again",
                              headers={"Retry-After": "5"})
    store.accounts.put_grant(DEVICE, _hash(device_code),
                             {"status": "pending", "login": None, "user_code": user_code,
                     "polled_at": None}, until, iso(now))
    return DeviceStart(device_code, user_code, interval, int(TTL.total_seconds()))


def pending(store: AccountConcerns, user_code: str) -> bool:
    """Whether `user_code` names a live login still awaiting a decision."""
    device = _device_of(store, user_code)
    return device is not None and device[1]["status"] == "pending"


def decide(store: AccountConcerns, user_code: str, login: str, approve: bool) -> bool:
    """Approve (for `login`) or deny a pending code; False if it is unknown, expired or decided."""
    device = _device_of(store, user_code)
    if device is None:
        return False
    changes = {"status": "approved", "login": login} if approve else {"status": "denied"}
    return store.accounts.update_grant(DEVICE, device[0], {"status": "pending"}, changes, iso(store.clock.now()))


def poll(store: AccountConcerns, device_code: str, interval: int) -> tuple[str, str | None]:
    """("ok", login) exactly once after approval, else (RFC 8628 error code, None)."""
    grant_id, now = _hash(device_code), store.clock.now()
    record = store.accounts.get_grant(DEVICE, grant_id, iso(now))
    if record is None:
        return "expired_token", None
    if record["status"] == "denied":
        return "access_denied", None
    if record["status"] == "approved":
        taken = store.accounts.update_grant(DEVICE, grant_id, {"status": "approved"}, {"status": "used"},
                                            iso(now))
        return ("ok", str(record["login"])) if taken else ("expired_token", None)
    if record["status"] != "pending":
        return "expired_token", None
    if _too_soon(record["polled_at"], now, interval):
        return "slow_down", None
    store.accounts.update_grant(DEVICE, grant_id, {"polled_at": record["polled_at"]},
                                {"polled_at": iso(now)}, iso(now))
    return "authorization_pending", None


def _too_soon(polled_at: str | None, now: datetime, interval: int) -> bool:
    """Polls closer than half the interval: clients sleep the interval between polls, and
    network jitter must not turn an honest client's poll into a slow-down."""
    if polled_at is None:
        return False
    last = datetime.fromisoformat(polled_at.replace("Z", "+00:00"))
    return (now - last).total_seconds() < interval / 2


def _device_of(store: AccountConcerns, user_code: str) -> tuple[str, dict[str, object]] | None:
    now = iso(store.clock.now())
    pointer = store.accounts.get_grant(USER_CODE, user_code, now)
    if pointer is None:
        return None
    grant_id = str(pointer["device"])
    record = store.accounts.get_grant(DEVICE, grant_id, now)
    return None if record is None else (grant_id, record)
