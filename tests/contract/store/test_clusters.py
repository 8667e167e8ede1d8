"""The Store contract for failure clusters over time, on every adapter: the last
recomputation's members are kept with its counts, only over the state they follow (a
recomputation run twice counts once), and a read takes a range of one grain's periods with
each period's failures by cluster."""

from __future__ import annotations

from bench_core.domain.cluster_series import ClusterKey, ClusterState
from bench_core.domain.models import AgentMeta, AgentRef
from bench_core.domain.timeseries import DAY, HOUR
from bench_core.ports.store import Store

from tests.factories import clean, task_events

REF = AgentRef("alice", "agent-1")


def agent(store: Store) -> None:
    store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(task_events("t1")))


def counts(*keyed: tuple[str, str, str, int]) -> dict[ClusterKey, int]:
    return {ClusterKey(cluster, grain, period): n for cluster, grain, period, n in keyed}


def test_a_state_is_kept_with_its_counts_and_read_back(store: Store) -> None:
    agent(store)
    assert store.clusters.cluster_state(REF) is None
    first = ClusterState({"c1": ["aaa", "bbb"], "c2": ["ccc"]}, 3, 1)
    assert store.clusters.keep_clusters(REF, first, counts(
        ("c1", HOUR, "2026-12-03T10", 2), ("c1", DAY, "2026-12-03", 2),
        ("c2", HOUR, "2026-12-03T11", 1), ("c2", DAY, "2026-12-03", 1)))
    assert store.clusters.cluster_state(REF) == ClusterState(
        {"c1": ["aaa", "bbb"], "c2": ["ccc"]}, 3, 1)
    second = ClusterState({"c1": ["aaa", "bbb", "ddd"], "c3": ["eee"]}, 4, 2)
    assert store.clusters.keep_clusters(REF, second, counts(
        ("c1", HOUR, "2026-12-03T11", 1), ("c1", DAY, "2026-12-03", 1),
        ("c3", HOUR, "2026-12-04T00", 1), ("c3", DAY, "2026-12-04", 1)))
    assert store.clusters.read_clusters(REF, HOUR, "2026-12-03T00", "2026-12-04T23") == [
        ("2026-12-03T10", {"c1": 2}), ("2026-12-03T11", {"c1": 1, "c2": 1}),
        ("2026-12-04T00", {"c3": 1})]
    assert store.clusters.read_clusters(REF, DAY, "2026-12-03", "2026-12-03") == [
        ("2026-12-03", {"c1": 3, "c2": 1})]
    assert store.clusters.read_clusters(REF, HOUR, "2026-12-05T00", "2026-12-05T23") == []
    assert store.clusters.cluster_state(REF) == second


def test_a_state_not_following_the_kept_one_counts_nothing(store: Store) -> None:
    """A recomputation run twice (a retried step) or two at once: the second is refused."""
    agent(store)
    state = ClusterState({"c1": ["aaa"]}, 2, 1)
    added = counts(("c1", HOUR, "2026-12-03T10", 1), ("c1", DAY, "2026-12-03", 1))
    assert store.clusters.keep_clusters(REF, state, added)
    assert not store.clusters.keep_clusters(REF, state, added)
    assert not store.clusters.keep_clusters(REF, ClusterState({"c1": ["aaa"]}, 2, 3), added)
    assert store.clusters.read_clusters(REF, DAY, "2026-12-01", "2026-12-31") == [
        ("2026-12-03", {"c1": 1})]
    assert store.clusters.cluster_state(REF) == state


def test_an_unknown_agent_keeps_nothing(store: Store) -> None:
    assert not store.clusters.keep_clusters(REF, ClusterState({"c1": ["aaa"]}, 2, 1), counts(
        ("c1", DAY, "2026-12-03", 1)))
    assert store.clusters.cluster_state(REF) is None
    assert store.clusters.read_clusters(REF, DAY, "2026-12-01", "2026-12-31") == []
