"""DynamoDB: what a look at an agent's monitors over its hourly counters reads
(`alerts/monitor.py` `watch_counters`), by DynamoDB's sizing rules (`tests/perf/dynamodb_cost.py`'s
`Meter`, deterministic): the five weeks of hours the windows and their baseline need, one Query
of the hour partition, eventually consistent. An agent busy every hour (each hour's bucket on
one counter shard, some 140 bytes without models): 15 read units of hours, 4 of its alerts
and settings and 1 of its insights (which name its failure clusters), once an hour; a model's
calls add some 60 bytes an hour, and a hot agent whose every hour is spread over all the
counter shards reads as many items as shards written. An agent with failure clusters reads
their five weeks of hours too (`watch_clusters`): one more Query of an item an hour, 7 read
units with two clusters busy every hour, 28 in all with its insights."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import boto3
from bench_core.alerts.monitor import HOURS_READ, watch_counters
from bench_core.clock import FixedClock
from bench_core.domain import stats
from bench_core.domain.cluster_series import ClusterKey, ClusterState
from bench_core.domain.models import Agent, AgentRef, iso
from bench_core.domain.timeseries import ALL, HOUR, Bucket, BucketKey, period_of
from bench_core.store.dynamodb.codec.keys import AgentKeys
from bench_core.store.dynamodb.codec.values import to_item
from bench_core.store.dynamodb.timeseries import series_updates

from tests.aws.moto_table import TABLE_NAME, dynamo_store
from tests.perf.dynamodb_cost import Meter

REF = AgentRef("owner", "busy")
NOW = datetime(2026, 12, 5, 12, 5, tzinfo=UTC)


def test_a_look_reads_five_weeks_of_hours_in_one_query() -> None:
    with dynamo_store(clock=FixedClock(NOW)) as store:
        hist = [int(30 <= i < 40) for i in range(stats.BUCKETS)]
        hour = Bucket(runs=10, successes=9, cost_usd=0.03, success_cost_usd=0.027,
                      input_tokens=9_000, output_tokens=2_500, latency_hist=hist,
                      eval_count=5, eval_score_sum=4.0)
        end = NOW.replace(minute=0)
        hours = [period_of(iso(end - timedelta(hours=h)), HOUR) for h in range(1, HOURS_READ + 1)]
        updates = series_updates(AgentKeys(REF.login, REF.slug),
                                 {BucketKey(ALL, HOUR, h): hour for h in hours}, 0)
        store.table.write_all([{**u.key, **to_item(u.add)} for u in updates])
        meter = Meter(TABLE_NAME, boto3.client("dynamodb"))
        meter.attach(store.client)
        assert watch_counters(store, REF, iso(NOW)) == []
        hours_read = meter.by_kind["query table"][1]
        print(f"a look over {HOURS_READ} hours: {hours_read} read units of hours, "
              f"{meter.rru} in all (its alerts, settings and insights too)")
        assert hours_read == 15.0 and meter.rru == 20.0, dict(meter.by_kind)

        store.agents.create_agent(Agent(login=REF.login, slug=REF.slug, created_at=iso(NOW)))
        store.clusters.keep_clusters(REF, ClusterState({"c1": ["a"], "c2": ["b"]}, 3, 1), {
            ClusterKey(c, HOUR, h): 1 for h in hours for c in ("c1", "c2")})
        store.evals.save_insights(REF, {"computed_at": iso(NOW), "clusters": [
            {"id": "c1", "label": "timeouts", "count": 840}, {"id": "c2", "label": "429s",
                                                              "count": 840}]})
        before = meter.rru
        assert watch_counters(store, REF, iso(NOW)) == []
        clusters_read = meter.by_kind["query table"][1] - 2 * hours_read
        print(f"its failure clusters' {HOURS_READ} hours: {clusters_read} read units, "
              f"{meter.rru - before} in all")
        assert clusters_read == 7.0 and meter.rru - before == 28.0, dict(meter.by_kind)
