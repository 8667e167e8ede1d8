"""DynamoDB: what keeping failure clusters over time costs an agent's hourly recomputation
(`store/dynamodb/clusters.py`), by DynamoDB's sizing rules (`tests/perf/dynamodb_cost.py`'s
`Meter`, deterministic). An agent with the most failures a recomputation considers
(`MAX_TASKS`, 1,000) and ten new ones since the last: its members (13-character digests,
some 16 KB) are read twice (by the step, and by the store to refuse a state that does not
follow them before it counts anything: 4 read units each) and written once (16 write units),
and the new failures add to their hour's and day's items (2 write units); beside the 500 read
units of the failures the recomputation reads, and nothing on the ingest path."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
from bench_core.clock import FixedClock
from bench_core.clustering.workflow import MAX_TASKS, cluster_agent
from bench_core.domain.models import AgentMeta, AgentRef, iso
from bench_core.runtime.adapters import Services
from bench_core.settings import Settings

from tests.aws.moto_table import TABLE_NAME, dynamo_store
from tests.factories import clean, task_events
from tests.perf.dynamodb_cost import Meter

REF = AgentRef("owner", "failing")
NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
ERRORS = ("TimeoutError: request to the search API timed out after 30s",
          "HTTP 429 Too Many Requests from openai: rate limit exceeded")


def failures(store: Any, first: int, count: int, at: datetime) -> None:
    for start in range(first, first + count, 100):
        events: list[dict[str, Any]] = []
        for i in range(start, min(start + 100, first + count)):
            events += task_events(f"f{i}", status="failed", output=ERRORS[i % 2])
        stamped = [{**e, "ts": iso(at + timedelta(milliseconds=k))} for k, e in enumerate(events)]
        store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), clean(stamped))


def test_an_hourly_recomputation_keeps_its_members_and_counts_in_a_few_units(tmp_path: Path) -> None:
    with dynamo_store(clock=FixedClock(NOW)) as store:
        services = Services(settings=Settings(data_dir=tmp_path), store=store)
        failures(store, 0, MAX_TASKS, NOW - timedelta(hours=3))
        cluster_agent(services, {"agent": REF.path})
        failures(store, MAX_TASKS, 10, NOW - timedelta(minutes=30))
        meter = Meter(TABLE_NAME, boto3.client("dynamodb"))
        meter.attach(store.client)
        cluster_agent(services, {"agent": REF.path})
        members, counts = meter.by_kind["agent CLUSTERS"], meter.by_kind["CLUSTERS"]
        print(f"members: {members[1]} read units, {members[0]} write units; "
              f"counts: {counts[0]} write units")
        assert members == [16.0, 8.0] and counts == [2.0, 0.0], dict(meter.by_kind)
        hours = store.clusters.read_clusters(REF, "hour", "2026-12-05T00", "2026-12-05T23")
        assert [(h, sum(c.values())) for h, c in hours] == [("2026-12-05T09", MAX_TASKS),
                                                             ("2026-12-05T11", 10)]
