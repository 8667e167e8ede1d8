"""API keys: shown once, stored only as a SHA-256 hash, compared in constant time.

`bk_…` owner keys write any agent of their owner; `bka_…` agent keys write one agent (ingest only).
Keys are 256-bit random, so a plain hash (no salt or stretching) cannot be brute-forced, and it
lets the store find a key by its hash in one lookup.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime

from .errors import Forbidden, Unauthorized
from .models import KeyRecord, iso

OWNER_PREFIX = "bk_"
AGENT_PREFIX = "bka_"
DISPLAY_CHARS = 8


def hash_key(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def new_key(login: str, agent_slug: str | None = None, name: str | None = None, *,
            now: datetime) -> tuple[str, KeyRecord]:
    """A fresh raw key and the record to store for it, made `now`."""
    prefix = AGENT_PREFIX if agent_slug else OWNER_PREFIX
    raw = prefix + secrets.token_urlsafe(32)
    record = KeyRecord(key_hash=hash_key(raw), prefix=raw[: len(prefix) + DISPLAY_CHARS],
                       login=login, agent_slug=agent_slug, name=name, created_at=iso(now))
    return raw, record


def looks_like_key(raw: str) -> bool:
    return raw.startswith((OWNER_PREFIX, AGENT_PREFIX)) and 16 <= len(raw) <= 200


def verify(raw: str, record: KeyRecord | None, now: datetime) -> KeyRecord:
    """The record if `raw` is its key, live `now`; 401 otherwise, with the same message for every case
    so a caller cannot tell unknown keys from revoked ones."""
    if record is None or not hmac.compare_digest(record.key_hash, hash_key(raw)) \
            or not record.active_at(now):
        raise Unauthorized("invalid or revoked API key")
    return record


def may_write(record: KeyRecord, login: str, slug: str) -> None:
    """403 unless the key's owner owns the agent and an agent key names this very agent."""
    if record.login != login or (record.agent_slug is not None and record.agent_slug != slug):
        raise Forbidden(f"this key may not write agent {login}/{slug}",
                        [{"loc": ["agent_slug"], "msg": "agent key is bound to another agent"}])
