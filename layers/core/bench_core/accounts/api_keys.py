"""API keys: checking the one a request presents, issuing and revoking an owner's keys.

Only the key's hash is stored (`domain.keys`); the raw key is shown once, when issued.
"""

from __future__ import annotations

import time
from datetime import timedelta

from ..domain.errors import NotFound, Unauthorized
from ..domain.keys import hash_key, looks_like_key, new_key, verify
from ..domain.models import KeyRecord, iso
from ..ports.services import WithAccounts
from . import AccountConcerns
from .key_cache import cache_of

TOUCH_EVERY = timedelta(minutes=1)


def authenticate(store: AccountConcerns, raw: str) -> KeyRecord:
    """The live key record for `raw`, recording its use at most once a minute. The record is
    read from the store at most every `key_cache.FRESH_S` (so a revocation holds within it)."""
    if not looks_like_key(raw):
        raise Unauthorized("invalid or revoked API key")
    now = store.clock.now()
    key_hash = hash_key(raw)
    cache = cache_of(store.accounts)
    found = cache.get(key_hash)
    if found is None:
        read_at = time.monotonic()
        found = store.accounts.key_by_hash(key_hash)
        if found is not None:
            cache.put(found, read_at)
    record = verify(raw, found, now)
    if record.last_used_at is None or record.last_used_at < iso(now - TOUCH_EVERY):
        store.accounts.touch_key(record.key_hash, iso(now))
        cache.touched(record.key_hash, iso(now))
    return record


def issue(store: AccountConcerns, login: str, slug: str | None = None, *,
          name: str | None = None) -> tuple[str, KeyRecord]:
    """A new key for `login` (an agent key if `slug`, else an owner key): raw, and stored."""
    raw, record = new_key(login, slug, name=name, now=store.clock.now())
    store.accounts.create_key(record)
    return raw, record


def keys_of(store: WithAccounts, login: str) -> list[KeyRecord]:
    """The owner's keys, newest first."""
    return sorted(store.accounts.list_keys(login), key=lambda k: k.created_at, reverse=True)


def revoke_own(store: AccountConcerns, login: str, key_hash: str) -> KeyRecord:
    """Revoke the owner's key with this hash (and return it); 404 for any other (or
    malformed) hash."""
    record = store.accounts.key_by_hash(key_hash) if len(key_hash) == 64 else None
    if record is None or record.login != login:
        raise NotFound("you have no such key")
    store.accounts.revoke_key(record.key_hash, iso(store.clock.now()))
    cache_of(store.accounts).forget(record.key_hash)
    return record
