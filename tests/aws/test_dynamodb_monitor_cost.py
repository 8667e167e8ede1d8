"""DynamoDB: what a look at an agent's monitors over its hourly counters reads
(`alerts/monitor.py` `watch_counters`), by DynamoDB's sizing rules (`tests/perf/dynamodb_cost.py`'s
`Meter`, deterministic): the five weeks of hours the windows and their baseline need, one Query
of the hour partition, eventually consistent. An agent busy every hour (each hour's bucket on
one counter shard, some 140 bytes without models): 15 read units of hours and 4 of its alerts
and settings, once an hour; a model's calls add some 60 bytes an hour, and a hot agent whose
every hour is spread over all the counter shards reads as many items as shards written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import boto3
from bench_core.alerts.monitor import HOURS_READ, watch_counters
from bench_core.clock import FixedClock
from bench_core.domain import stats
from bench_core.domain.models import AgentRef, iso
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
              f"{meter.rru} in all (its alerts and settings too)")
        assert hours_read == 15.0 and meter.rru == 19.0, dict(meter.by_kind)
