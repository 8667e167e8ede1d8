"""Retention, on every adapter: raw events go `event_retention_days` after their time, usage
records of calls through Bench at their own expiry, a temporary agent (the /try sandbox's)
goes whole at its expiry (also its capability card, grants and benchmark runs); tasks,
counters and evals stay.

SQLite deletes in `purge_expired`; DynamoDB stamps the table's TTL attribute as it writes.
moto deletes nothing by TTL, so `expire` does what DynamoDB's TTL would: delete every item
whose `expires_at` has passed. The same assertions then hold for both.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

import pytest
from bench_core.clock import SYSTEM_CLOCK
from bench_core.domain.benchmark_records import Attempt, RunRecord
from bench_core.domain.feedback import Feedback
from bench_core.domain.keys import hash_key, new_key
from bench_core.domain.models import Agent, AgentMeta, AgentRef, EvalResult, iso
from bench_core.domain.reuse_records import InvocationGrant, UsageRecord
from bench_core.ports.store import Store
from bench_core.store.dynamodb.codec.pages import page_events
from bench_core.store.dynamodb.codec.values import plain
from bench_core.store.dynamodb.store import DynamoStore
from bench_core.store.memory.retention import MemoryRetention
from bench_core.store.memory.store import MemoryStore
from bench_core.store.sqlite.retention import SqliteRetention
from bench_core.store.sqlite.store import SqliteStore
from bench_core.trial import sandbox

from tests.factories import clean, ev, task_events

NOW = SYSTEM_CLOCK.now().replace(microsecond=0)
REF = AgentRef("alice", "agent-1")
TEMP = AgentRef("try--0123456789ab", "demo-agent")
SUITE = "demo-v1"


def at(when: datetime) -> str:
    return iso(when)


def ingest(store: Store, ref: AgentRef, events: list[dict[str, Any]]):
    return store.ingest.ingest(ref.login, AgentMeta(slug=ref.slug), clean(events))


def timed(events: list[dict[str, Any]], when: datetime) -> list[dict[str, Any]]:
    """`events` happening at `when`, a millisecond apart, in order."""
    return [{**e, "ts": at(when + timedelta(milliseconds=i))} for i, e in enumerate(events)]


def dynamo_items(store: DynamoStore) -> list[dict[str, Any]]:
    pages = store.client.get_paginator("scan").paginate(TableName=store.table_name)
    return [item for page in pages for item in page["Items"]]


def expire(store: Store, when: datetime) -> None:
    """Let `when` come: SQLite's (or the in-memory store's) purge, or DynamoDB's TTL
    deletion."""
    if isinstance(store, DynamoStore):
        for item in dynamo_items(store):
            if "expires_at" in item and int(item["expires_at"]["N"]) <= when.timestamp():
                store.client.delete_item(TableName=store.table_name,
                                         Key={"pk": item["pk"], "sk": item["sk"]})
    else:
        store.retention.purge_expired(at(when))


def spare_newest(store: Store, n: int) -> None:
    """SQLite and the in-memory store spare each agent's newest events (1,000 normally;
    DynamoDB cannot)."""
    if isinstance(store.retention, SqliteRetention | MemoryRetention):
        store.retention.spared_events = n


def kept_for(store: Store, days: int) -> Store:
    """The same data, its raw events kept `days` (0: for ever)."""
    if isinstance(store, DynamoStore):
        return DynamoStore.open(store.table_name, client=store.client, event_retention_days=days)
    if isinstance(store, MemoryStore):
        return MemoryStore.open(store.memory, event_retention_days=days)
    assert isinstance(store, SqliteStore)
    return SqliteStore.open(store.path, event_retention_days=days)


def test_events_past_the_retention_go_and_tasks_and_counters_stay(store: Store) -> None:
    spare_newest(store, 2)
    ingest(store, REF, timed(task_events("old", cost=0.5), NOW - timedelta(days=40)))
    ingest(store, REF, timed([*task_events("new"), ev("custom")], NOW - timedelta(hours=1)))
    expire(store, NOW)
    assert store.ingest.task_events(REF, "old") == []
    assert [e["kind"] for e in store.ingest.recent_events(REF, 10)] == ["custom", "task.end",
                                                                  "task.start"]
    old = store.ingest.get_task(REF, "old")
    assert old is not None and (old.status, old.cost_usd, old.input) == ("success", 0.5,
                                                                        {"q": "old"})
    assert [t.task_id for t in store.ingest.list_tasks(REF)[0]] == ["new", "old"]
    stats = store.agents.get_agent(REF).stats
    assert (stats.runs, stats.cost_usd_total) == (2, 0.5)
    assert sum(d["runs"] for d in store.ingest.daily(REF, "2000-01-01")) == 2


def test_events_within_the_retention_stay(store: Store) -> None:
    ingest(store, REF, timed(task_events("t1"), NOW - timedelta(days=29)))
    expire(store, NOW)
    assert len(store.ingest.task_events(REF, "t1")) == 2


def test_a_retention_of_zero_keeps_events_for_ever(store: Store) -> None:
    store = kept_for(store, 0)
    spare_newest(store, 1)
    ingest(store, REF, timed(task_events("t1"), NOW - timedelta(days=4000)))
    expire(store, NOW + timedelta(days=4000))
    assert len(store.ingest.task_events(REF, "t1")) == 2


def test_sqlite_spares_each_agents_newest_events(tmp_path) -> None:
    store = SqliteStore.open(tmp_path / "bench.db")
    spare_newest(store, 3)
    other = AgentRef("bob", "quiet")
    ingest(store, REF, timed([ev("custom", data={"n": i}) for i in range(5)], NOW - timedelta(days=90)))
    ingest(store, other, timed([ev("custom") for _ in range(2)], NOW - timedelta(days=90)))
    assert store.retention.purge_expired(at(NOW)) == 2
    assert [e["data"]["n"] for e in store.ingest.recent_events(REF, 10)] == [4, 3, 2]
    assert len(store.ingest.recent_events(other, 10)) == 2
    store.close()


def start_sandbox(store: Store, expires: datetime) -> str:
    """A temporary agent as `sandbox.create` makes it, with a key expiring with it."""
    assert store.agents.create_agent(Agent(login=TEMP.login, slug=TEMP.slug, visibility="private",
                                           created_at=at(NOW), expires_at=at(expires)))
    _, key = new_key(TEMP.login, TEMP.slug, name="sandbox", now=SYSTEM_CLOCK.now())
    key.expires_at = at(expires)
    store.accounts.create_key(key)
    return key.key_hash


def test_a_temporary_agent_goes_whole_at_its_expiry(store: Store) -> None:
    expires = NOW + timedelta(hours=24)
    key_hash = start_sandbox(store, expires)
    ingest(store, REF, timed(task_events("kept", status="failed"), NOW))
    ingest(store, TEMP, timed([*task_events("p1", status="failed"),
                               *task_events("c1", parent="p1", cost=0.1)], NOW))
    result = EvalResult(status="scored", judge="heuristic-v1", at=at(NOW), score=0.1,
                        input_tokens=10, cost_usd=0.001, attempts=1)
    assert store.evals.record_eval(TEMP, "p1", result)
    store.evals.save_insights(TEMP, {"computed_at": at(NOW - timedelta(seconds=1)), "clusters": []})
    assert store.agents.get_agent(TEMP).expires_at == at(expires)
    said = Feedback(feedback_id="f1", run_id="p1", kind="thumbs", score=0.0, source="owner",
                    created_at=at(NOW))
    store.feedback.add_feedback(TEMP, said, expires_at=at(expires))
    store.feedback.set_agreement(TEMP, "p1", "ff", expires_at=at(expires))
    store.feedback.set_label_set(TEMP, ["wrong-tool"], expires_at=at(expires))

    expire(store, expires - timedelta(seconds=1))
    assert store.agents.get_agent(TEMP).stats.runs == 1
    assert store.ingest.get_task(TEMP, "c1") is not None and store.evals.get_insights(TEMP) is not None
    assert store.feedback.run_feedback(TEMP, "p1", 10) == [said]
    assert TEMP in store.evals.clusters_due(100)

    expire(store, expires + timedelta(seconds=1))
    assert store.agents.get_agent(TEMP) is None and store.agents.list_agents(TEMP.login) == []
    assert store.ingest.list_tasks(TEMP) == ([], None)
    assert store.ingest.get_task(TEMP, "p1") is None and store.ingest.get_task(TEMP, "c1") is None
    assert store.ingest.recent_events(TEMP, 10) == [] and store.ingest.task_events(TEMP, "p1") == []
    assert store.ingest.daily(TEMP, "2000-01-01") == [] and store.evals.get_insights(TEMP) is None
    assert store.accounts.key_by_hash(key_hash) is None
    assert store.feedback.run_feedback(TEMP, "p1", 10) == []
    assert store.feedback.run_marks(TEMP, ["p1"]) == {} and store.feedback.label_set(TEMP) is None
    assert store.feedback.agreement_tables([TEMP])[TEMP].n == 0
    assert TEMP not in store.evals.clusters_due(100)
    assert store.agents.get_agent(REF).stats.runs == 1 and len(store.ingest.task_events(REF, "kept")) == 2
    if isinstance(store, DynamoStore):
        left = [item["pk"]["S"] for item in dynamo_items(store)
                if TEMP.login in str(item)]
        assert left == [], left


def test_an_expired_temporary_agent_is_gone_before_any_purge(store: Store) -> None:
    start_sandbox(store, NOW - timedelta(seconds=1))
    assert store.agents.get_agent(TEMP) is None


@pytest.mark.parametrize("retention_days", [30, 7])
def test_dynamodb_stamps_events_with_their_time_plus_the_retention(retention_days: int) -> None:
    """A batch's events of no task share a page item, which expires with its newest event (and
    so do their claims); a task's events, the only copy of its content, stay with it."""
    from tests.aws.moto_table import dynamo_store

    with dynamo_store(event_retention_days=retention_days) as store:
        when = NOW - timedelta(days=3)
        ingest(store, REF, timed([ev("custom"), ev("custom")], when))
        ingest(store, REF, timed(task_events("t1"), when))
        items = dynamo_items(store)
        pages = [i for i in items if i["sk"]["S"].startswith("B#")]
        expiring = [i for i in items if "expires_at" in i]
        assert len(pages) == 2 and all(len(page_events(plain(p))) == 2 for p in pages)
        newest = when + timedelta(milliseconds=1)
        assert {i["sk"]["S"][:3] for i in expiring} == {"B#2", "EV#"} and len(expiring) == 3
        assert all(int(i["expires_at"]["N"]) <= math.ceil(
            (newest + timedelta(days=retention_days)).timestamp()) for i in expiring)
        kept = [i for i in items if "expires_at" not in i]
        assert any(i["sk"]["S"] == "TASK#t1" for i in kept)
        assert any(i["sk"]["S"].startswith("B#") for i in kept)  # the task's events


def test_a_sandbox_agent_expires_with_its_key(store: Store) -> None:
    login, raw = sandbox.create(store)
    key = store.accounts.key_by_hash(hash_key(raw))
    agent = store.agents.get_agent(AgentRef(login, sandbox.SLUG))
    assert key.expires_at is not None and agent.expires_at == key.expires_at


# ---- authorized reuse and benchmarks -----------------------------------------------------------


def usage(login: str, call_id: str, expires: datetime | None) -> UsageRecord:
    return UsageRecord(login=login, at=at(NOW - timedelta(minutes=1)), call_id=call_id,
                       agent=f"{REF.login}/{REF.slug}", status="success", http_status=200,
                       duration_ms=3.5, expires_at=at(expires) if expires else None)


def test_usage_records_go_at_their_expiry_and_are_hidden_from_it_on(store: Store) -> None:
    going = usage("carol", "going", NOW + timedelta(days=30))
    kept = usage("carol", "kept", None)
    for record in (going, kept):
        store.reuse.record_usage(record)
    assert store.reuse.list_usage("carol", 10) == [kept, going]
    expire(store, NOW + timedelta(days=30) - timedelta(seconds=1))
    assert store.reuse.list_usage("carol", 10) == [kept, going]
    expire(store, NOW + timedelta(days=30))
    assert store.reuse.list_usage("carol", 10) == [kept]
    store.reuse.record_usage(usage("carol", "past", NOW - timedelta(seconds=1)))
    assert store.reuse.list_usage("carol", 10) == [kept], "expired, even before any purge"


def test_a_temporary_agents_card_grants_and_benchmark_runs_go_with_it(store: Store) -> None:
    expires = NOW + timedelta(hours=24)
    start_sandbox(store, expires)
    store.agents.create_agent(Agent(login=REF.login, slug=REF.slug, created_at=at(NOW)))
    card = {"capability": {"description": "d", "skills": []}, "invocation": {"mode": "disabled"}}
    for ref in (TEMP, REF):
        assert store.reuse.put_capability(ref, card, at(NOW), "bis_secret")
        store.reuse.put_invocation_grant(InvocationGrant(
            login=ref.login, slug=ref.slug, caller="dave", calls_per_day=5, calls_per_minute=None,
            expires_at=None, created_at=at(NOW)))
        assert store.benchmarks.save_benchmark_run(benchmark_run(f"run-{ref.login}", ref))
    store.reuse.record_usage(usage(TEMP.login, "sandbox-call", expires))

    expire(store, expires + timedelta(seconds=1))
    assert store.reuse.get_capability(TEMP) is None and store.reuse.invocation_grants(TEMP) == []
    assert store.benchmarks.get_benchmark_run(f"run-{TEMP.login}") is None
    assert store.reuse.list_usage(TEMP.login, 10) == []
    assert [r.run_id for r in store.benchmarks.benchmark_ranking(SUITE, limit=10)] == [f"run-{REF.login}"]
    assert store.reuse.get_capability(REF) is not None and len(store.reuse.invocation_grants(REF)) == 1
    kept = store.benchmarks.get_benchmark_run(f"run-{REF.login}")
    assert kept is not None and len(kept.attempts) == 1
    if isinstance(store, DynamoStore):
        left = [(item["pk"]["S"], item["sk"]["S"]) for item in dynamo_items(store)
                if TEMP.login in str(item)]
        assert left == [], left


def benchmark_run(run_id: str, ref: AgentRef) -> RunRecord:
    attempt = Attempt(case_id="c1", repeat=0, status="ok", input={"question": "q"},
                      output="a", output_hash="sha256:" + "a" * 64, duration_ms=1.0, score=1.0,
                      passed=True, judge="grounding-heuristic-v1", reasoning="fine")
    return RunRecord(run_id=run_id, login=ref.login, slug=ref.slug, suite=SUITE,
                     suite_hash="sha256:" + "b" * 64, submitted_at=at(NOW), repeats=1,
                     judge="grounding-heuristic-v1", summary={"pass_rate": 1.0, "pass_hat_k": 1.0, "k": 1},
                     attempts=[attempt])
