"""Failure clusters over time: a recomputation's clusters take the ids of those they continue
(by shared members), and each run is counted once, in its cluster's hour and day, where it
ended; through the real cluster step (`clustering/workflow.py` `cluster_agent`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from bench_core.clustering import workflow as cluster
from bench_core.domain.cluster_series import ClusterKey, ClusterState, carry_ids, new_counts
from bench_core.domain.models import AgentMeta, AgentRef
from bench_core.domain.timeseries import DAY, HOUR
from bench_core.runtime.adapters import Services
from bench_core.settings import Settings

from tests.factories import an_hour_ago, clean, task_events

REF = AgentRef("alice", "agent-1")
TIMEOUT = "TimeoutError: request to the search API timed out after 30s"
RATE = "HTTP 429 Too Many Requests from openai: rate limit exceeded"
PARSE = "JSONDecodeError: Expecting value while parsing the crm reply"


def test_a_cluster_keeps_its_id_as_its_newest_members_replace_its_oldest() -> None:
    before = ClusterState({"c1": list("abcdef"), "c2": list("uvwxyz")}, 3, 4)
    after = carry_ids(before, [list("xyz123"), list("defghi")])
    assert list(after.members) == ["c2", "c1"]
    assert after.generation == 5 and after.next_id == 3


def test_a_new_failure_mode_gets_a_new_id_and_an_old_one_keeps_its_own() -> None:
    before = ClusterState({"c1": list("abcdef")}, 2, 1)
    after = carry_ids(before, [list("abcdefg"), list("pqrs")])
    assert list(after.members) == ["c1", "c2"] and after.next_id == 3


def test_a_split_keeps_the_id_in_its_larger_part_and_a_merge_in_the_bigger_giver() -> None:
    split = carry_ids(ClusterState({"c4": list("abcdefgh")}, 5, 1), [list("abc"), list("defgh")])
    assert list(split.members) == ["c5", "c4"]
    merged = carry_ids(ClusterState({"c1": list("ab"), "c2": list("cdef")}, 3, 1),
                       [list("abcdef")])
    assert list(merged.members) == ["c2"]


def test_too_little_in_common_is_a_new_cluster() -> None:
    """Two of c1's ten members (the rest went with c2's into one cluster) are not c1."""
    before = ClusterState({"c1": list("abcdefghij"), "c2": list("KLMNOPQRST")}, 3, 1)
    after = carry_ids(before, [list("abuvwxyz"), list("cdefghij") + list("KLMNOPQRST")])
    assert list(after.members) == ["c3", "c2"]


def test_a_cluster_whose_old_members_have_all_left_keeps_its_id_by_those_still_held() -> None:
    before = ClusterState({"c1": list("abcdefghij")}, 2, 1)
    assert list(carry_ids(before, [list("a") + list("KLMNOPQRST")]).members) == ["c1"]


def test_only_members_not_held_before_are_counted_where_they_ended() -> None:
    before = ClusterState({"c1": ["a", "b"]}, 2, 1)
    after = ClusterState({"c1": ["a", "b", "c"], "c2": ["d", "e"]}, 3, 2)
    ended = {"a": "2026-12-03T09:10:00Z", "c": "2026-12-03T10:59:00Z",
             "d": "2026-12-03T10:01:00Z", "e": "2026-12-04T00:00:00Z"}
    assert new_counts(before, after, ended) == {
        ClusterKey("c1", HOUR, "2026-12-03T10"): 1, ClusterKey("c1", DAY, "2026-12-03"): 1,
        ClusterKey("c2", HOUR, "2026-12-03T10"): 1, ClusterKey("c2", DAY, "2026-12-03"): 1,
        ClusterKey("c2", HOUR, "2026-12-04T00"): 1, ClusterKey("c2", DAY, "2026-12-04"): 1}


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    s = Services.from_settings(Settings(data_dir=tmp_path, store="memory"))
    yield s
    s.close()


def fail(services: Services, prefix: str, texts: list[str]) -> None:
    events = []
    for i, text in enumerate(texts):
        events += task_events(f"{prefix}{i}", status="failed", output=text)
    services.store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(an_hour_ago(events)))


def clusters_by_label_word(services: Services) -> dict[str, dict[str, object]]:
    insights = services.store.evals.get_insights(REF)
    assert insights is not None
    words = ("timeout", "429", "jsondecodeerror")
    return {next(w for w in words if w in " ".join(c["terms"]).lower()): c
            for c in insights["clusters"]}


def total(services: Services, grain: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for _, counts in services.store.clusters.read_clusters(REF, grain, "2000", "3000"):
        for cluster_id, n in counts.items():
            out[cluster_id] = out.get(cluster_id, 0) + n
    return out


def test_recomputed_clusters_keep_their_ids_and_count_each_run_once(services: Services) -> None:
    fail(services, "a", [TIMEOUT] * 15 + [RATE] * 15)
    cluster.cluster_agent(services, {"agent": REF.path})
    first = clusters_by_label_word(services)
    assert set(first) == {"timeout", "429"}
    assert total(services, DAY) == {first["timeout"]["id"]: 15, first["429"]["id"]: 15}

    fail(services, "b", [TIMEOUT] * 5 + [PARSE] * 12)
    cluster.cluster_agent(services, {"agent": REF.path})
    second = clusters_by_label_word(services)
    assert {k: c["id"] for k, c in second.items() if k != "jsondecodeerror"} == {
        k: c["id"] for k, c in first.items()}, "the clusters that go on keep their ids"
    assert second["jsondecodeerror"]["id"] not in {c["id"] for c in first.values()}
    counted = {first["timeout"]["id"]: 20, first["429"]["id"]: 15,
               second["jsondecodeerror"]["id"]: 12}
    assert total(services, DAY) == counted == total(services, HOUR)

    cluster.cluster_agent(services, {"agent": REF.path})
    assert total(services, DAY) == counted, "a recomputation with nothing new counts nothing"
