"""The Store contract for accounts and the live feed: API keys, users' GitHub identities,
temporary keys, short-lived grants, rate-limit counters, WebSocket connections -- proven
against each adapter."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import datetime

from bench_core.domain.keys import new_key
from bench_core.domain.live import LiveConnection
from bench_core.domain.models import iso
from bench_core.ports.store import Store

from tests.factories import ts

T0 = "2026-12-02T16:00:00.000Z"
T1 = "2026-12-02T16:05:00.000Z"
T2 = "2026-12-02T16:10:00.000Z"
LATER = "2999-01-01T00:00:00.000Z"


# ---- keys ------------------------------------------------------------------------------------


def test_keys_are_found_by_hash_listed_and_revoked(store: Store) -> None:
    _, owner = new_key("alice", now=store.clock.now())
    _, agent_key = new_key("alice", "agent-1", name="ci", now=store.clock.now())
    _, other = new_key("bob", now=store.clock.now())
    for record in (owner, agent_key, other):
        store.accounts.create_key(record)
    found = store.accounts.key_by_hash(agent_key.key_hash)
    assert found is not None and found.agent_slug == "agent-1" and found.name == "ci"
    assert store.accounts.key_by_hash("0" * 64) is None
    assert {k.key_hash for k in store.accounts.list_keys("alice")} == {owner.key_hash, agent_key.key_hash}
    assert len(store.accounts.list_keys()) == 3
    when = iso(store.clock.now())
    assert store.accounts.revoke_key(owner.key_hash, when) is True
    assert store.accounts.revoke_key(owner.key_hash, when) is False
    assert store.accounts.key_by_hash(owner.key_hash).revoked_at == when
    store.accounts.touch_key(other.key_hash, when)
    assert store.accounts.key_by_hash(other.key_hash).last_used_at == when


def test_keys_are_listed_by_exact_login_oldest_first(store: Store) -> None:
    records = [replace(new_key(login, now=store.clock.now())[1], created_at=ts(offset))
               for login, offset in (("alice", 300), ("alice", 100), ("alicia", 200))]
    for record in records:
        store.accounts.create_key(record)
    assert [k.key_hash for k in store.accounts.list_keys("alice")] == [records[1].key_hash,
                                                                       records[0].key_hash]
    assert store.accounts.list_keys("ali") == []
    assert [k.login for k in store.accounts.list_keys()] == ["alice", "alicia", "alice"]


# ---- users -----------------------------------------------------------------------------------


def test_a_login_is_bound_to_the_first_github_account_that_claims_it(store: Store) -> None:
    assert store.accounts.claim_login("alice", 101, T0) is True
    assert store.accounts.claim_login("alice", 101, T1) is True
    assert store.accounts.claim_login("alice", 202, T1) is False, "a renamed account's old name"
    assert store.accounts.claim_login("alice", None, T1) is True, "local sign-in binds nothing"


def test_a_user_made_by_a_key_is_bound_on_first_github_sign_in(store: Store) -> None:
    _, record = new_key("bob", now=store.clock.now())
    store.accounts.create_key(record)
    assert store.accounts.claim_login("bob", 7, T0) is True
    assert store.accounts.claim_login("bob", 8, T0) is False


# ---- temporary keys --------------------------------------------------------------------------


def test_a_temporary_key_keeps_its_expiry_and_is_inactive_after_it(store: Store) -> None:
    _, record = new_key("carol", "demo", now=store.clock.now())
    store.accounts.create_key(replace(record, expires_at=LATER))
    _, old = new_key("carol", "demo", now=store.clock.now())
    store.accounts.create_key(replace(old, expires_at=T0))
    live, expired = store.accounts.key_by_hash(record.key_hash), store.accounts.key_by_hash(old.key_hash)
    assert live is not None and live.expires_at == LATER and live.active_at(datetime.fromisoformat(T1))
    assert expired is not None and expired.expires_at == T0 and not expired.active_at(datetime.fromisoformat(T1))
    _, forever = new_key("carol", now=store.clock.now())
    store.accounts.create_key(forever)
    assert store.accounts.key_by_hash(forever.key_hash).expires_at is None


# ---- grants ----------------------------------------------------------------------------------


def test_a_grant_is_stored_once_read_until_it_expires_and_deleted(store: Store) -> None:
    assert store.accounts.put_grant("session", "s1", {"login": "alice"}, T2, T0) is True
    assert store.accounts.put_grant("session", "s1", {"login": "mallory"}, T2, T0) is False
    assert store.accounts.get_grant("session", "s1", T1) == {"login": "alice"}
    assert store.accounts.get_grant("session", "s1", T2) is None, "expired at its instant"
    assert store.accounts.get_grant("device", "s1", T1) is None, "kinds are separate"
    store.accounts.delete_grant("session", "s1")
    assert store.accounts.get_grant("session", "s1", T0) is None


def test_an_expired_grant_id_can_be_used_again(store: Store) -> None:
    assert store.accounts.put_grant("code", "ABCD", {"n": 1}, T1, T0) is True
    assert store.accounts.put_grant("code", "ABCD", {"n": 2}, T2, T1) is True
    assert store.accounts.get_grant("code", "ABCD", T1) == {"n": 2}


def test_update_grant_is_compare_and_set(store: Store) -> None:
    store.accounts.put_grant("device", "d1", {"status": "pending", "login": None}, T2, T0)
    assert store.accounts.update_grant("device", "d1", {"status": "approved"}, {"status": "used"}, T0) is False
    assert store.accounts.update_grant("device", "d1", {"status": "pending"},
                                       {"status": "approved", "login": "alice"}, T0) is True
    assert store.accounts.get_grant("device", "d1", T0) == {"status": "approved", "login": "alice"}
    assert store.accounts.update_grant("device", "d1", {"status": "approved"}, {"status": "used"}, T2) is False, \
        "an expired grant cannot change"
    assert store.accounts.update_grant("device", "nope", {}, {"status": "used"}, T0) is False


def test_concurrent_compare_and_set_lets_exactly_one_win(store: Store) -> None:
    store.accounts.put_grant("device", "race", {"status": "approved"}, LATER, T0)
    wins: list[bool] = []

    def take() -> None:
        wins.append(store.accounts.update_grant("device", "race", {"status": "approved"},
                                                {"status": "used"}, T0))

    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(wins) == [False] * 7 + [True]


# ---- counters ----------------------------------------------------------------------------------


def test_count_hit_counts_each_bucket_atomically(store: Store) -> None:
    assert store.accounts.count_hit("try:203.0.113.7:2026120216", LATER) == 1
    assert store.accounts.count_hit("try:203.0.113.7:2026120216", LATER) == 2
    assert store.accounts.count_hit("try:198.51.100.1:2026120216", LATER) == 1
    threads = [threading.Thread(target=store.accounts.count_hit, args=("busy", LATER)) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.accounts.count_hit("busy", LATER) == 11


# ---- live connections ------------------------------------------------------------------------


def test_connections_are_listed_by_owner_until_removed_or_expired(store: Store) -> None:
    agent_feed = LiveConnection("c1", "alice", "agent-1", None, LATER)
    owner_feed = LiveConnection("c2", "alice", None, "alice", LATER)
    stale = LiveConnection("c3", "alice", "agent-1", "bob", T0)
    other = LiveConnection("c4", "bob", "agent-1", None, LATER)
    for connection in (agent_feed, owner_feed, stale, other):
        store.accounts.add_connection(connection)
    assert store.accounts.live_connections("alice", T1) == [agent_feed, owner_feed]
    assert store.accounts.live_connections("bob", T1) == [other]
    store.accounts.remove_connection("c1")
    store.accounts.remove_connection("never-there")
    assert store.accounts.live_connections("alice", T1) == [owner_feed]
