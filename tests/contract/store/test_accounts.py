"""The Store contract for accounts and the live feed: users' GitHub identities, temporary keys,
short-lived grants, rate-limit counters, WebSocket connections, agents created before their
first event -- proven against each adapter."""

from __future__ import annotations

import threading
from dataclasses import replace

from bench_core.domain.keys import new_key
from bench_core.domain.live import LiveConnection
from bench_core.domain.models import Agent, AgentMeta, AgentRef
from bench_core.store import Store

from tests.factories import clean, task_events

T0 = "2026-12-02T16:00:00.000Z"
T1 = "2026-12-02T16:05:00.000Z"
T2 = "2026-12-02T16:10:00.000Z"
LATER = "2999-01-01T00:00:00.000Z"


# ---- users -----------------------------------------------------------------------------------


def test_a_login_is_bound_to_the_first_github_account_that_claims_it(store: Store) -> None:
    assert store.claim_login("alice", 101, T0) is True
    assert store.claim_login("alice", 101, T1) is True
    assert store.claim_login("alice", 202, T1) is False, "a renamed account's old name"
    assert store.claim_login("alice", None, T1) is True, "local sign-in binds nothing"


def test_a_user_made_by_a_key_is_bound_on_first_github_sign_in(store: Store) -> None:
    _, record = new_key("bob")
    store.create_key(record)
    assert store.claim_login("bob", 7, T0) is True
    assert store.claim_login("bob", 8, T0) is False


# ---- temporary keys --------------------------------------------------------------------------


def test_a_temporary_key_keeps_its_expiry_and_is_inactive_after_it(store: Store) -> None:
    _, record = new_key("carol", "demo")
    store.create_key(replace(record, expires_at=LATER))
    _, old = new_key("carol", "demo")
    store.create_key(replace(old, expires_at=T0))
    live, expired = store.key_by_hash(record.key_hash), store.key_by_hash(old.key_hash)
    assert live is not None and live.expires_at == LATER and live.active
    assert expired is not None and expired.expires_at == T0 and not expired.active
    _, forever = new_key("carol")
    store.create_key(forever)
    assert store.key_by_hash(forever.key_hash).expires_at is None


# ---- grants ----------------------------------------------------------------------------------


def test_a_grant_is_stored_once_read_until_it_expires_and_deleted(store: Store) -> None:
    assert store.put_grant("session", "s1", {"login": "alice"}, T2, T0) is True
    assert store.put_grant("session", "s1", {"login": "mallory"}, T2, T0) is False
    assert store.get_grant("session", "s1", T1) == {"login": "alice"}
    assert store.get_grant("session", "s1", T2) is None, "expired at its instant"
    assert store.get_grant("device", "s1", T1) is None, "kinds are separate"
    store.delete_grant("session", "s1")
    assert store.get_grant("session", "s1", T0) is None


def test_an_expired_grant_id_can_be_used_again(store: Store) -> None:
    assert store.put_grant("code", "ABCD", {"n": 1}, T1, T0) is True
    assert store.put_grant("code", "ABCD", {"n": 2}, T2, T1) is True
    assert store.get_grant("code", "ABCD", T1) == {"n": 2}


def test_update_grant_is_compare_and_set(store: Store) -> None:
    store.put_grant("device", "d1", {"status": "pending", "login": None}, T2, T0)
    assert store.update_grant("device", "d1", {"status": "approved"}, {"status": "used"}, T0) is False
    assert store.update_grant("device", "d1", {"status": "pending"},
                              {"status": "approved", "login": "alice"}, T0) is True
    assert store.get_grant("device", "d1", T0) == {"status": "approved", "login": "alice"}
    assert store.update_grant("device", "d1", {"status": "approved"}, {"status": "used"}, T2) is False, \
        "an expired grant cannot change"
    assert store.update_grant("device", "nope", {}, {"status": "used"}, T0) is False


def test_concurrent_compare_and_set_lets_exactly_one_win(store: Store) -> None:
    store.put_grant("device", "race", {"status": "approved"}, LATER, T0)
    wins: list[bool] = []

    def take() -> None:
        wins.append(store.update_grant("device", "race", {"status": "approved"},
                                       {"status": "used"}, T0))

    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(wins) == [False] * 7 + [True]


# ---- counters ----------------------------------------------------------------------------------


def test_count_hit_counts_each_bucket_atomically(store: Store) -> None:
    assert store.count_hit("try:203.0.113.7:2026120216", LATER) == 1
    assert store.count_hit("try:203.0.113.7:2026120216", LATER) == 2
    assert store.count_hit("try:198.51.100.1:2026120216", LATER) == 1
    threads = [threading.Thread(target=store.count_hit, args=("busy", LATER)) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.count_hit("busy", LATER) == 11


# ---- live connections ------------------------------------------------------------------------


def test_connections_are_listed_by_owner_until_removed_or_expired(store: Store) -> None:
    agent_feed = LiveConnection("c1", "alice", "agent-1", None, LATER)
    owner_feed = LiveConnection("c2", "alice", None, "alice", LATER)
    stale = LiveConnection("c3", "alice", "agent-1", "bob", T0)
    other = LiveConnection("c4", "bob", "agent-1", None, LATER)
    for connection in (agent_feed, owner_feed, stale, other):
        store.add_connection(connection)
    assert store.live_connections("alice", T1) == [agent_feed, owner_feed]
    assert store.live_connections("bob", T1) == [other]
    store.remove_connection("c1")
    store.remove_connection("never-there")
    assert store.live_connections("alice", T1) == [owner_feed]


# ---- agents before their first event ---------------------------------------------------------


def test_an_agent_created_private_stays_private_through_ingest(store: Store) -> None:
    ref = AgentRef("dora", "secret-agent")
    agent = Agent(login="dora", slug="secret-agent", display_name="Secret", visibility="private",
                  hide_inputs=True, created_at=T0)
    assert store.create_agent(agent) is True
    assert store.create_agent(replace(agent, visibility="public")) is False
    created = store.get_agent(ref)
    assert created is not None
    assert (created.visibility, created.hide_inputs, created.hide_outputs, created.display_name,
            created.stats.runs) == ("private", True, False, "Secret", 0)
    assert [a.slug for a in store.list_agents("dora")] == ["secret-agent"]
    store.ingest("dora", AgentMeta(slug="secret-agent"), clean(task_events("t1")))
    after = store.get_agent(ref)
    assert after is not None and after.visibility == "private" and after.stats.runs == 1
    assert after.display_name == "Secret"
