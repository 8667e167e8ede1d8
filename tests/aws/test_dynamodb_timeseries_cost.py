"""DynamoDB: an agent's counters over time cost what `store/dynamodb/timeseries.py` says, by
DynamoDB's sizing rules (`tests/perf/dynamodb_cost.py`'s `Meter`, deterministic): a steady
batch (ten runs of one version in one hour) adds to two bucket items in its own transaction
(its hour and day: the version's numbers are on the agent's items), 2 write units each, and
its round of evals to the same two; a version's buckets as older code kept them (items of
their own) are read until the table's migration folds them into the agent's; a 90-day chart is one Query of
the day partition, eventually consistent, whatever else the agent keeps: 90 days of 10 shards
of ~650 bytes, 29.5 read units; with one more of its failure clusters' days (an item a day,
two clusters: half a unit) and the insights naming them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import boto3
from bench_core.clock import FixedClock
from bench_core.domain import stats
from bench_core.domain.cluster_series import ClusterKey, ClusterState
from bench_core.domain.models import AgentMeta, AgentRef, EvalResult
from bench_core.domain.timeseries import ALL, DAY, HOUR, Bucket, BucketKey, ModelUse, scope_of
from bench_core.reads.analytics import Selection, analytics, periods
from bench_core.store.dynamodb.codec.agents import COUNTER_SHARDS
from bench_core.store.dynamodb.codec.keys import AgentKeys
from bench_core.store.dynamodb.codec.values import to_item
from bench_core.store.dynamodb.layout import SERIES_MERGED, Layout
from bench_core.store.dynamodb.migration import migrate
from bench_core.store.dynamodb.timeseries import bucket_sk, series_pk, series_updates

from tests.aws.moto_table import TABLE_NAME, dynamo_store
from tests.factories import clean, task_events
from tests.perf.dynamodb_cost import Meter

REF = AgentRef("owner", "busy")
NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


def bucket_units(meter: Meter) -> tuple[float, float]:
    """The write units of the bucket items themselves, and of the entries in the active
    agents' index that an hour bucket's first write on a counter shard puts beside them."""
    entries = sum(tally.wru for (index, pk), tally in meter.by_partition.items()
                  if index == "tasks" and str(pk).startswith("ACTIVE#"))
    return meter.by_kind["SERIES"][0] - entries, entries


def test_a_batch_and_its_evals_add_to_two_bucket_items_each() -> None:
    with dynamo_store(clock=FixedClock(NOW)) as store:
        meter = Meter(TABLE_NAME, boto3.client("dynamodb"))
        meter.attach(store.client)
        events: list[dict[str, Any]] = []
        for i in range(10):
            events += task_events(f"r{i}", status="failed" if i % 7 == 0 else "success")
        store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug, version="v1"), clean(events))
        assert bucket_units(meter) == (4.0, 1.0), \
            "2 items, 2 units each in a transaction; the hour's entry in the active agents' index"
        meter.reset()
        results = {f"r{i}": EvalResult(status="scored", judge="heuristic-v1", at=NOW.isoformat(),
                                       score=0.5, reasoning="", prompt_version="p", attempts=1)
                   for i in range(10)}
        assert store.evals.record_evals(REF, results) == set(results)
        items, entries = bucket_units(meter)
        assert items == 4.0 and entries <= 1.0, "an entry only if its counter shard is new"
        hour = events[-1]["ts"][:13]
        (_, v1), = store.timeseries.read_buckets(REF, scope_of(version="v1"), HOUR, hour, hour)
        (_, everyone), = store.timeseries.read_buckets(REF, ALL, HOUR, hour, hour)
        assert (v1.runs, v1.eval_count, everyone.runs, everyone.eval_count) == (10, 10, 10, 10)
        assert store.timeseries.read_buckets(REF, scope_of(version="v2"), HOUR, hour, hour) == []


def test_a_versions_buckets_kept_on_items_of_their_own_are_read_until_migrated() -> None:
    """As older code kept them (`TS#{g}#v:{version}#...`), on a table whose migration is not
    through version 5: read beside the agent's, then folded into them by the pass."""
    with dynamo_store(clock=FixedClock(NOW)) as store:
        events = task_events("new", "search")
        store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug, version="v1"), clean(events))
        agent, hour = AgentKeys(REF.login, REF.slug), events[-1]["ts"][:13]
        old = {"pk": series_pk(agent, HOUR), "sk": bucket_sk(BucketKey("v:v1", HOUR, hour), 3)}
        store.table.write_all([to_item({**old, "r": 2, "s": 1, "h40": 2})])
        store.table.put(to_item({**dict(zip(("pk", "sk"), ("MIGRATION", "META"), strict=True)),
                                 "done": SERIES_MERGED - 1}))
        store.table.layout = Layout()

        def runs(scope: str) -> tuple[int, int, int]:
            (_, bucket), = store.timeseries.read_buckets(REF, scope, HOUR, hour, hour)
            return bucket.runs, bucket.successes, sum(bucket.latency_hist)

        before = runs(scope_of(version="v1")), runs(ALL)
        assert before == ((3, 2, 3), (1, 1, 1))
        report = migrate(store.table)
        assert report.done and report.series == 1
        assert store.table.get(to_item(old)) is None
        assert (runs(scope_of(version="v1")), runs(ALL)) == before
        assert migrate(store.table).series == 0


def test_a_90_day_read_is_one_query_of_the_days_whatever_else_is_kept() -> None:
    with dynamo_store(clock=FixedClock(NOW)) as store:
        store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), clean(task_events("seed")))
        hist = stats.empty_histogram()
        for i in range(30, 46):
            hist[i] = 5
        full = Bucket(runs=80, successes=70, cost_usd=0.3, evidence_cost_usd=0.2,
                      success_cost_usd=0.25, success_evidence_cost_usd=0.15,
                      input_tokens=70_000, output_tokens=20_000, latency_hist=hist,
                      eval_count=40, eval_score_sum=30.0,
                      models={("openai", "gpt-4o"): ModelUse(80, 60_000, 18_000, 0.2)})
        agent = AgentKeys(REF.login, REF.slug)
        days = periods("1y", NOW)[-100:]  # the 90 read, and 10 before them
        for shard in range(COUNTER_SHARDS):
            updates = series_updates(agent, {BucketKey(ALL, DAY, d): full for d in days}, shard)
            updates += series_updates(agent, {BucketKey(ALL, HOUR, h): full
                                              for h in periods("24h", NOW)}, shard)
            # the items as their ADDs leave them, put 25 at a time (moto is slow per update)
            store.table.write_all([{**u.key, **to_item(u.add)} for u in updates])
        store.clusters.keep_clusters(REF, ClusterState({"c1": ["a"], "c2": ["b"]}, 3, 1), {
            ClusterKey(c, DAY, d): 7 for d in days for c in ("c1", "c2")})
        seen = store.agents.get_agent(REF)
        meter = Meter(TABLE_NAME, boto3.client("dynamodb"))
        meter.attach(store.client)
        calls: list[str] = []
        store.client.meta.events.register(
            "after-call.dynamodb", lambda event_name, **_: calls.append(event_name))
        assert seen is not None
        read = analytics(store, seen, Selection("90d"))
        assert read["total"]["runs"] == 90 * COUNTER_SHARDS * 80
        assert [c["failures"] for c in read["failure_clusters"]] == [90 * 7, 90 * 7]
        assert calls == ["after-call.dynamodb.Query"] * 2 + ["after-call.dynamodb.GetItem"], \
            "one Query of the days, not one per shard, one of the failure clusters' days, and " \
            "the insights that name them"
        clusters = meter.by_kind["query table"][1] - 29.5
        print(f"a 90-day read: {meter.rru} read units, {clusters} of them its clusters' days")
        assert meter.rru <= 40 and clusters <= 1, meter.rru
