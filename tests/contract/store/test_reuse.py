"""Authorized reuse in the store: capability cards, invocation grants, quota counters, usage.
The same suite runs on SQLite and on DynamoDB (moto)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from bench_core.domain.models import AgentRef
from bench_core.domain.reuse_records import InvocationGrant, QuotaWindow, UsageRecord
from bench_core.ports.store import Store

REF = AgentRef("owner", "helper")
CARD = {"capability": {"schema_version": "1", "description": "Answers questions", "skills": []},
        "invocation": {"mode": "http", "url": "https://agent.example.com/call"}}
DAY = QuotaWindow("day", "day:2026-12-03", 3, "2099-12-04T00:00:00.000Z")


def minute(n: int, limit: int = 1) -> QuotaWindow:
    return QuotaWindow("minute", f"minute:2026-12-03T10:{n:02d}", limit,
                       f"2099-12-03T10:{n + 1:02d}:00.000Z")


def grant(caller: str, per_day: int = 10, per_minute: int | None = None,
          expires_at: str | None = None) -> InvocationGrant:
    return InvocationGrant(login=REF.login, slug=REF.slug, caller=caller, calls_per_day=per_day,
                           calls_per_minute=per_minute, expires_at=expires_at,
                           created_at="2026-12-03T10:00:00.000Z")


def test_first_publish_keeps_its_secret_and_later_ones_keep_the_first(store: Store) -> None:
    assert store.reuse.get_capability(REF) is None
    assert store.reuse.put_capability(REF, CARD, "2026-12-03T10:00:00.000Z", "bis_first") is True
    changed = {**CARD, "capability": {**CARD["capability"], "description": "Now better"}}
    assert store.reuse.put_capability(REF, changed, "2026-12-03T11:00:00.000Z", "bis_second") is False
    stored = store.reuse.get_capability(REF)
    assert stored is not None
    assert (stored.card, stored.secret) == (changed, "bis_first")
    assert (stored.published_at, stored.updated_at) == ("2026-12-03T10:00:00.000Z",
                                                        "2026-12-03T11:00:00.000Z")
    assert stored.endpoint == "https://agent.example.com/call"


def test_rotating_the_secret_needs_a_published_card(store: Store) -> None:
    assert store.reuse.rotate_invocation_secret(REF, "bis_new", "2026-12-03T10:00:00.000Z") is False
    store.reuse.put_capability(REF, CARD, "2026-12-03T10:00:00.000Z", "bis_first")
    assert store.reuse.rotate_invocation_secret(REF, "bis_new", "2026-12-03T12:00:00.000Z") is True
    stored = store.reuse.get_capability(REF)
    assert stored is not None and stored.secret == "bis_new"
    assert stored.updated_at == "2026-12-03T12:00:00.000Z"


def test_grants_are_kept_per_caller_replaced_and_revoked(store: Store) -> None:
    assert store.reuse.invocation_grants(REF) == [] and store.reuse.get_invocation_grant(REF, "alice") is None
    store.reuse.put_invocation_grant(grant("alice"))
    store.reuse.put_invocation_grant(grant("*", per_day=5, per_minute=2,
                                           expires_at="2027-01-01T00:00:00.000Z"))
    store.reuse.put_invocation_grant(grant("alice", per_day=50))
    assert store.reuse.invocation_grants(REF) == [
        grant("*", per_day=5, per_minute=2, expires_at="2027-01-01T00:00:00.000Z"),
        grant("alice", per_day=50)]
    assert store.reuse.get_invocation_grant(REF, "alice") == grant("alice", per_day=50)
    assert store.reuse.get_invocation_grant(AgentRef("owner", "other"), "alice") is None
    assert store.reuse.delete_invocation_grant(REF, "alice") is True
    assert store.reuse.delete_invocation_grant(REF, "alice") is False
    assert store.reuse.get_invocation_grant(REF, "alice") is None
    assert [g.caller for g in store.reuse.invocation_grants(REF)] == ["*"]


def test_quota_is_exact_under_twenty_concurrent_takes(store: Store) -> None:
    window = QuotaWindow("day", "day:2026-12-03", 7, "2099-12-04T00:00:00.000Z")
    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(lambda _: store.reuse.take_invocation_quota(REF, "alice", [window]),
                                range(20)))
    assert results.count(None) == 7
    assert [r for r in results if r is not None] == [window] * 13


def test_quota_counts_per_caller_and_per_agent(store: Store) -> None:
    one = QuotaWindow("day", "day:2026-12-03", 1, "2099-12-04T00:00:00.000Z")
    assert store.reuse.take_invocation_quota(REF, "alice", [one]) is None
    assert store.reuse.take_invocation_quota(REF, "alice", [one]) == one
    assert store.reuse.take_invocation_quota(REF, "bob", [one]) is None
    assert store.reuse.take_invocation_quota(AgentRef("owner", "other"), "alice", [one]) is None


def test_a_call_refused_by_one_window_counts_in_none(store: Store) -> None:
    assert store.reuse.take_invocation_quota(REF, "alice", [DAY, minute(0)]) is None
    assert store.reuse.take_invocation_quota(REF, "alice", [DAY, minute(0)]) == minute(0)
    assert store.reuse.take_invocation_quota(REF, "alice", [DAY, minute(1)]) is None
    assert store.reuse.take_invocation_quota(REF, "alice", [DAY, minute(2)]) is None
    assert store.reuse.take_invocation_quota(REF, "alice", [DAY, minute(3)]) == DAY


def test_usage_is_listed_per_login_newest_first(store: Store) -> None:
    records = [UsageRecord(login="alice", at=f"2026-12-03T10:00:0{i}.000Z", call_id=f"c{i}",
                           agent="owner/helper", status="success" if i % 2 else "failed",
                           http_status=200 if i % 2 else 502, duration_ms=12.5 + i,
                           error=None if i % 2 else "the agent answered HTTP 500")
               for i in range(4)]
    for record in records:
        store.reuse.record_usage(record)
    store.reuse.record_usage(UsageRecord(login="bob", at="2026-12-03T11:00:00.000Z", call_id="b",
                                         agent="owner/helper", status="success", http_status=200,
                                         duration_ms=1.0))
    assert store.reuse.list_usage("alice", 10) == records[::-1]
    assert store.reuse.list_usage("alice", 2) == records[:1:-1]
    assert [u.call_id for u in store.reuse.list_usage("bob", 10)] == ["b"]
    assert store.reuse.list_usage("carol", 10) == []


def test_usage_of_one_agents_keys_is_listed_apart(store: Store) -> None:
    def made(call_id: str, second: int, caller_agent: str | None) -> UsageRecord:
        return UsageRecord(login="dana", at=f"2026-12-03T10:00:0{second}.000Z", call_id=call_id,
                           agent="owner/helper", status="success", http_status=200,
                           duration_ms=1.0, caller_agent=caller_agent)

    records = [made("owner", 1, None), made("ci-1", 2, "ci"), made("bot", 3, "bot"),
               made("ci-2", 4, "ci")]
    for record in records:
        store.reuse.record_usage(record)
    assert store.reuse.list_usage("dana", 10) == records[::-1]
    assert store.reuse.list_usage("dana", 10, "ci") == [records[3], records[1]]
    assert store.reuse.list_usage("dana", 1, "ci") == [records[3]]
    assert store.reuse.list_usage("dana", 10, "nobody") == []
