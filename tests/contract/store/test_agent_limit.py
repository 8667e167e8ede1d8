"""The Store contract for the agents of one account, on every adapter: at most
`max_agents_per_account`, however an agent comes to exist (a first batch, with or without
task events, or `create_agent`), counted exactly under concurrent creators, and a refused
agent leaves nothing behind."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from bench_core.clock import SYSTEM_CLOCK
from bench_core.domain.errors import TooManyAgents
from bench_core.domain.models import Agent, AgentMeta, AgentRef, IngestOutcome, IngestWrite, iso
from bench_core.ports.store import Store
from bench_core.store.memory.store import MemoryStore
from bench_core.store.sqlite.store import SqliteStore

from tests.factories import clean, ev, task_events

LIMIT = 3


@pytest.fixture(params=["sqlite", "dynamodb", "memory"])
def limited(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A store allowing `LIMIT` agents per account."""
    if request.param == "memory":
        yield MemoryStore.open(max_agents_per_account=LIMIT)
        return
    if request.param == "sqlite":
        store = SqliteStore.open(tmp_path / "bench.db", max_agents_per_account=LIMIT)
        yield store
        store.close()
        return
    from tests.aws.moto_table import dynamo_store

    with dynamo_store(max_agents_per_account=LIMIT) as store:
        yield store


def reopened(store: Store, most: int) -> Store:
    """The same data under another limit."""
    if isinstance(store, SqliteStore):
        return SqliteStore.open(store.path, max_agents_per_account=most)
    if isinstance(store, MemoryStore):
        return MemoryStore.open(store.memory, max_agents_per_account=most)
    from bench_core.store.dynamodb.store import DynamoStore

    assert isinstance(store, DynamoStore)
    return DynamoStore.open(store.table_name, client=store.client, max_agents_per_account=most)


def agent(slug: str, login: str = "alice") -> Agent:
    return Agent(login=login, slug=slug, created_at=iso(SYSTEM_CLOCK.now()))


def test_an_account_makes_at_most_its_limit_of_agents_by_any_path(limited: Store) -> None:
    limited.ingest.ingest("alice", AgentMeta(slug="by-tasks"), clean(task_events("t1")))
    limited.ingest.ingest("alice", AgentMeta(slug="by-custom"), clean([ev("custom")]))
    assert limited.agents.create_agent(agent("created"))
    with pytest.raises(TooManyAgents, match=f"has {LIMIT} agents"):
        limited.ingest.ingest("alice", AgentMeta(slug="fourth"), clean(task_events("t2")))
    with pytest.raises(TooManyAgents):
        limited.ingest.ingest("alice", AgentMeta(slug="fourth"), clean([ev("custom")]))
    with pytest.raises(TooManyAgents):
        limited.ingest.ingest("alice", AgentMeta(slug="fourth"), [])
    with pytest.raises(TooManyAgents):
        limited.agents.create_agent(agent("fourth"))
    assert limited.agents.get_agent(AgentRef("alice", "fourth")) is None
    assert sorted(a.slug for a in limited.agents.list_agents("alice")) == [
        "by-custom", "by-tasks", "created"]
    assert not limited.agents.create_agent(agent("created")), "an agent that exists is no new agent"
    outcome = limited.ingest.ingest("alice", AgentMeta(slug="by-tasks"), clean(task_events("t3")))
    assert outcome.accepted == 2
    assert limited.ingest.ingest("bob", AgentMeta(slug="fourth"), clean([ev("custom")])).accepted == 1


def test_a_refused_agents_events_are_new_once_it_may_exist(limited: Store) -> None:
    for slug in ("a", "b", "c"):
        limited.ingest.ingest("alice", AgentMeta(slug=slug), [])
    events = clean([ev("custom"), *task_events("t1")])
    with pytest.raises(TooManyAgents):
        limited.ingest.ingest("alice", AgentMeta(slug="late"), events)
    roomier = reopened(limited, LIMIT + 1)
    outcome = roomier.ingest.ingest("alice", AgentMeta(slug="late"), events)
    assert (outcome.accepted, outcome.duplicates) == (3, 0)
    assert roomier.agents.get_agent(AgentRef("alice", "late")).stats.runs == 1


def test_concurrent_first_batches_make_exactly_the_limit_of_agents(limited: Store) -> None:
    def first_batch(i: int) -> bool:
        try:
            limited.ingest.ingest("alice", AgentMeta(slug=f"agent-{i}"),
                                  clean([ev("custom")] if i % 2 else task_events(f"t{i}")))
        except TooManyAgents:
            return False
        return True

    with ThreadPoolExecutor(max_workers=8) as pool:
        made = list(pool.map(first_batch, range(12)))
    assert sum(made) == LIMIT
    assert len(limited.agents.list_agents("alice")) == LIMIT


def test_a_refused_agent_written_with_others_is_undone_alone(limited: Store) -> None:
    """Batches written together (`ingest_many`, the local server's group commit): the one past
    the limit fails with its own error, leaving nothing, and the others are stored."""
    writes = [IngestWrite("alice", AgentMeta(slug=f"a{n}"), clean(task_events(f"t{n}")))
              for n in range(LIMIT + 1)]
    results = limited.ingest.ingest_many([*writes, writes[0]])
    assert [type(r) for r in results] == [IngestOutcome] * LIMIT + [TooManyAgents, IngestOutcome]
    assert sorted(a.slug for a in limited.agents.list_agents("alice")) == ["a0", "a1", "a2"]
    assert limited.ingest.recent_events(AgentRef("alice", f"a{LIMIT}"), 10) == []
    assert [(r.accepted, r.duplicates) for r in results if isinstance(r, IngestOutcome)] == [
        (2, 0)] * LIMIT + [(0, 2)]
