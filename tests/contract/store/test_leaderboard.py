"""The leaderboard contract: every store keeps its rankings on write and reads them in order,
public agents only, the same way (`bench_core.domain.ranking` says who ranks by what); a new
agent ranks once it has a few runs and is a day old."""

from __future__ import annotations

from datetime import timedelta

from bench_core.clock import SYSTEM_CLOCK
from bench_core.domain.models import Agent, AgentMeta, AgentRef, iso
from bench_core.domain.ranking import MIN_RUNS, SORTS, Qualification
from bench_core.ports.store import Store

from tests.factories import clean, day_old, task_events, ts


def runs(store: Store, login: str, slug: str, n: int, *, failures: int = 0,
         duration_ms: int = 100, cost: float | None = 0.01, **meta: object) -> None:
    """`n` finished runs for login/slug, the last `failures` of them failed, of an agent
    whose first batch came two days ago (unless it exists)."""
    store.agents.create_agent(day_old(login, slug))
    events = []
    for i in range(n):
        events += task_events(f"{slug}-{i}-{duration_ms}", status="failed" if i >= n - failures
                              else "success", duration_ms=duration_ms, cost=cost)
    store.ingest.ingest(login, AgentMeta(slug=slug, **meta), clean(events))


def slugs(store: Store, sort: str, **kwargs: object) -> list[str]:
    return [a.slug for a in store.leaderboard.leaderboard(sort, **kwargs)]


def test_each_sort_orders_its_qualified_agents(store: Store) -> None:
    runs(store, "alice", "steady", 40, failures=4, duration_ms=300, cost=0.02)
    runs(store, "alice", "fast", 12, failures=6, duration_ms=50, cost=0.001)
    runs(store, "bob", "perfect", 10, duration_ms=900, cost=None)
    runs(store, "bob", "newcomer", MIN_RUNS - 1, duration_ms=10, cost=0.0001)
    assert slugs(store, "runs") == ["steady", "fast", "perfect", "newcomer"]
    assert slugs(store, "success") == ["perfect", "steady", "fast"]
    assert slugs(store, "latency") == ["fast", "steady", "perfect"]
    assert slugs(store, "cost") == ["fast", "steady"]  # "perfect" reports no cost
    assert slugs(store, "score") == []  # nobody has scored runs


def test_ties_go_to_the_agent_with_more_runs(store: Store) -> None:
    runs(store, "alice", "small", 10, failures=5)
    runs(store, "alice", "large", 30, failures=15)
    assert slugs(store, "success") == ["large", "small"]
    assert slugs(store, "latency") == ["large", "small"]


def test_a_tie_across_pages_goes_by_runs_then_login_and_slug(store: Store) -> None:
    """Equal success rates (every run a success): more runs first, then login and slug, the
    same on every page however the agents are spread."""
    for i, n in enumerate([12, 15, 10, 15, 11, 14, 13]):
        runs(store, "bob" if i % 2 else "alice", f"agent-{i}", n)
    everyone = slugs(store, "success")
    assert everyone == ["agent-1", "agent-3", "agent-5", "agent-6", "agent-0", "agent-4",
                        "agent-2"]
    pages = [slugs(store, "success", offset=offset, limit=2) for offset in (0, 2, 4, 6)]
    assert sum(pages, []) == everyone


def test_rankings_follow_new_runs(store: Store) -> None:
    runs(store, "alice", "a", 10, failures=2)
    runs(store, "alice", "b", 10, failures=1)
    assert slugs(store, "success") == ["b", "a"]
    runs(store, "alice", "b", 10, failures=10, duration_ms=101)
    assert slugs(store, "success") == ["a", "b"]
    assert [a.stats.runs for a in store.leaderboard.leaderboard("runs")] == [20, 10]


def test_private_agents_are_never_ranked_and_return_when_public(store: Store) -> None:
    runs(store, "alice", "open", 10)
    runs(store, "alice", "closed", 20)
    store.agents.update_agent(AgentRef("alice", "closed"), {"visibility": "private"})
    for sort in ("runs", "success", "latency", "cost"):
        assert slugs(store, sort) == ["open"], sort
    runs(store, "alice", "closed", 5, duration_ms=7)  # still private after more runs
    assert slugs(store, "runs") == ["open"]
    store.agents.update_agent(AgentRef("alice", "closed"), {"visibility": "public"})
    assert slugs(store, "runs") == ["closed", "open"]


def test_search_matches_login_slug_names_framework_and_model(store: Store) -> None:
    runs(store, "alice", "researcher", 6, display_name="Deep Research", framework="LangChain")
    runs(store, "bob", "coder", 5, model="Llama-3.3-70B")
    assert slugs(store, "runs", query="RESEARCH") == ["researcher"]
    assert slugs(store, "runs", query="langchain") == ["researcher"]
    assert slugs(store, "runs", query="llama-3.3") == ["coder"]
    assert slugs(store, "runs", query="bob") == ["coder"]
    assert slugs(store, "runs", query="nothing like it") == []
    store.agents.update_agent(AgentRef("bob", "coder"), {"display_name": "Code Monkey"})
    assert slugs(store, "runs", query="monkey") == ["coder"]


def test_pages_are_offsets_into_one_order(store: Store) -> None:
    for i in range(7):
        runs(store, "alice", f"agent-{i}", i + 5)
    everyone = slugs(store, "runs")
    assert everyone == [f"agent-{i}" for i in range(6, -1, -1)]
    pages = [slugs(store, "runs", offset=offset, limit=3) for offset in (0, 3, 6)]
    assert pages == [everyone[0:3], everyone[3:6], everyone[6:]]
    assert slugs(store, "runs", query="agent", offset=5, limit=5) == everyone[5:]


def test_dynamodb_ranks_from_sparse_sharded_indexes_without_a_scan() -> None:
    """Each ranking is one Query per shard of its own index (which holds keys, not agents),
    and one Query of each of the page's agents (its item and counter shards)."""
    from bench_core.store.dynamodb.leaderboard import SHARDS

    from tests.aws.moto_table import dynamo_store

    with dynamo_store() as store:
        runs(store, "alice", "open", 12)
        runs(store, "alice", "closed", 12)
        store.agents.update_agent(AgentRef("alice", "closed"), {"visibility": "private"})
        calls: list[tuple[str, str | None]] = []
        store.client.meta.events.register(
            "before-parameter-build.dynamodb",
            lambda model, params, **_: calls.append((model.name, params.get("IndexName"))))
        for sort in ("runs", "success", "score", "cost", "latency"):
            ranked = store.leaderboard.leaderboard(sort, query="alice")
            read = [("Query", None)] * len(ranked)
            assert calls == [("Query", f"lb_{sort}")] * SHARDS + read, sort
            assert [a.slug for a in ranked] == ([] if sort == "score" else ["open"])
            calls.clear()
        closed = store.client.get_item(TableName=store.table_name, Key={
            "pk": {"S": "AGENT#alice#closed"}, "sk": {"S": "META"}})["Item"]
        assert not [name for name in closed if name == "lbpk" or name.startswith("lb_")]


def test_a_new_agent_ranks_once_it_has_the_runs_a_day_after_its_first_batch(
        store: Store) -> None:
    """By Bench's clock: runs whose senders stamp them days apart do not make an agent old."""
    rule = Qualification()
    spread = [dict(e, ts=ts(i * 3_600_000)) for i in range(2 * rule.min_runs)
              for e in task_events(f"fresh-{i}")]
    store.ingest.ingest("alice", AgentMeta(slug="fresh"), clean(spread))
    for hours, slug in ((rule.min_age_hours + 1, "older"), (rule.min_age_hours - 1, "younger")):
        made = iso(SYSTEM_CLOCK.now() - timedelta(hours=hours))
        assert store.agents.create_agent(Agent(login="alice", slug=slug, created_at=made))
    runs(store, "alice", "younger", 2 * rule.min_runs)
    runs(store, "alice", "older", rule.min_runs - 1)
    for sort in SORTS:
        assert slugs(store, sort) == [], sort
    runs(store, "alice", "older", 1, duration_ms=7)
    assert slugs(store, "runs") == ["older"]
    assert store.agents.get_agent(AgentRef("alice", "fresh")).stats.runs == 2 * rule.min_runs
    assert slugs(store, "runs", query="fresh") == []
