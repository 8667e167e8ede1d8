"""The key records kept between requests: used only while fresh, stamped when touched,
forgotten on revocation, and bounded."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from bench_core.accounts.key_cache import FRESH_S, KeyCache, cache_of
from bench_core.domain.keys import new_key
from bench_core.domain.models import KeyRecord

NOW = datetime(2026, 12, 2, tzinfo=UTC)


def a_key() -> KeyRecord:
    return new_key("alice", now=NOW)[1]


def test_a_record_is_used_while_fresh_and_read_again_after() -> None:
    cache, key = KeyCache(), a_key()
    cache.put(key, time.monotonic())
    assert cache.get(key.key_hash) is key
    cache.put(key, time.monotonic() - FRESH_S)
    assert cache.get(key.key_hash) is None
    assert FRESH_S < 1.0, "a revocation elsewhere holds within a second"


def test_a_touched_key_is_kept_with_its_new_stamp_and_a_revoked_one_is_forgotten() -> None:
    cache, key = KeyCache(), a_key()
    cache.put(key, time.monotonic())
    cache.touched(key.key_hash, "2026-12-02T00:01:00.000Z")
    assert cache.get(key.key_hash).last_used_at == "2026-12-02T00:01:00.000Z"
    cache.forget(key.key_hash)
    assert cache.get(key.key_hash) is None


def test_the_cache_holds_at_most_max_keys() -> None:
    cache = KeyCache(max_keys=3)
    keys = [a_key() for _ in range(4)]
    for key in keys:
        cache.put(key, time.monotonic())
    assert [cache.get(k.key_hash) is not None for k in keys] == [False, False, False, True]


def test_each_store_has_a_cache_of_its_own() -> None:
    class Accounts: ...

    one, other = Accounts(), Accounts()
    assert cache_of(one) is cache_of(one)
    assert cache_of(one) is not cache_of(other)
