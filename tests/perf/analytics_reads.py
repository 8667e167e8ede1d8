"""What reading an agent's analytics over time costs (`reads.analytics`): the time of each range's
read on SQLite, and the read units of each on DynamoDB (moto), for an agent that sent 1M events
over the last 90 days (and as many before, for the year).

    python tests/perf/analytics_reads.py [--events 1000000] [--days 90] [--reads 50]

The buckets are written straight through the store (`TimeSeriesStore.add_buckets`), as many as
ingest would have made of that traffic: the steady batch of `tests/perf/dynamodb_cost.py` (50
events, 10 runs) every `days * 24 * 3600 * 50 / events` seconds, so every hour of the range
holds runs, for the agent, its version (a new one every 30 days) and three tags; each bucket
with a latency histogram of 16 buckets and two models. On DynamoDB each bucket is spread over
the counter shards its batches picked (`codec.agents.COUNTER_SHARDS`; an hour of ~9 batches
touches ~6 of 10, a day all 10). The read is the whole use case (`analytics`), its answer
made: the median of `--reads` on SQLite, read units by DynamoDB's sizing rules (the `Meter` of
`dynamodb_cost.py`: eventually consistent, 4 KB a unit over the items a Query reads).

Not a test: times depend on the machine.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench_core.clock import FixedClock  # noqa: E402
from bench_core.domain import stats  # noqa: E402
from bench_core.domain.models import AgentRef, iso  # noqa: E402
from bench_core.domain.privacy import new_agent  # noqa: E402
from bench_core.domain.timeseries import (  # noqa: E402
    ALL,
    DAY,
    HOUR,
    Bucket,
    BucketKey,
    ModelUse,
    scope_of,
)
from bench_core.ports.store import Store  # noqa: E402
from bench_core.reads.analytics import RANGES, Selection, analytics  # noqa: E402
from bench_core.store.dynamodb.codec.agents import COUNTER_SHARDS  # noqa: E402

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
REF = AgentRef("perf", "busy")
EVENTS_PER_BATCH, RUNS_PER_BATCH = 50, 10
TAGS = ("prod", "eu", "beta")


def bucket(runs: int, rng: random.Random) -> Bucket:
    hist = stats.empty_histogram()
    for i in rng.sample(range(30, 60), 16):
        hist[i] = max(1, runs // 16)
    ok = runs - runs // 10
    return Bucket(runs=runs, successes=ok, cost_usd=runs * 0.004, evidence_cost_usd=runs * 0.003,
                  success_cost_usd=ok * 0.004, success_evidence_cost_usd=ok * 0.003,
                  input_tokens=runs * 900, output_tokens=runs * 300, latency_hist=hist,
                  eval_count=runs // 2, eval_score_sum=runs * 0.4,
                  models={("openai", "gpt-4o"): ModelUse(runs, runs * 800, runs * 250, 0.002),
                          ("anthropic", "claude-3-5-haiku"): ModelUse(runs // 2, 100, 50, 0.001)})


def traffic(events: int, days: int) -> dict[BucketKey, tuple[int, int]]:
    """Each bucket the traffic makes (over `days` and as long before it, for the year): its
    runs and how many batches add to it."""
    batches = events // EVENTS_PER_BATCH
    every = timedelta(days=days) / batches
    out: dict[BucketKey, tuple[int, int]] = {}
    start = NOW - timedelta(days=min(365, 2 * days))
    for n in range(int((NOW - start) / every)):
        at = start + n * every
        hour, day = at.strftime("%Y-%m-%dT%H"), at.strftime("%Y-%m-%d")
        version = f"v{(NOW - at).days // 30}"
        for scope in (ALL, scope_of(version=version), *(scope_of(tag=t) for t in TAGS)):
            for grain, period in ((HOUR, hour), (DAY, day)):
                runs, seen = out.get(BucketKey(scope, grain, period), (0, 0))
                out[BucketKey(scope, grain, period)] = (runs + RUNS_PER_BATCH, seen + 1)
    return out


def fill(store: Store, made: dict[BucketKey, tuple[int, int]], shards: bool) -> int:
    """Write `made` through the store: on DynamoDB each bucket over as many shards as its
    batches would have picked at random, on average; the items written."""
    rng = random.Random(7)
    store.agents.create_agent(new_agent(REF.login, REF.slug, iso(NOW - timedelta(days=400))))
    items = 0
    for key, (runs, batches) in made.items():
        parts = round(COUNTER_SHARDS * (1 - (1 - 1 / COUNTER_SHARDS) ** batches)) if shards else 1
        for _part in range(parts):
            store.timeseries.add_buckets(REF, {key: bucket(max(1, runs // parts), rng)})
            items += 1
    return items


def sqlite_times(made: dict[BucketKey, tuple[int, int]], reads: int) -> dict[str, float]:
    from bench_core.store.sqlite.store import SqliteStore

    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore.open(Path(tmp) / "bench.db", clock=FixedClock(NOW))
        print(f"SQLite: {fill(store, made, shards=False):,} rows written")
        times = {}
        for span in RANGES:
            chosen = Selection(span)
            analytics(store, store.agents.get_agent(REF), chosen)  # warm
            samples = []
            for _ in range(reads):
                t0 = time.perf_counter()
                answer = analytics(store, store.agents.get_agent(REF), chosen)
                samples.append((time.perf_counter() - t0) * 1000)
            assert answer["total"]["runs"] > 0
            times[span] = statistics.median(samples)
        store.close()
        return times


def dynamodb_units(made: dict[BucketKey, tuple[int, int]]) -> dict[str, float]:
    """Read units of each range's read: only the buckets the reads' Queries range over are
    written (the agent's days, its last two days of hours), as a Query pays for what it
    reads alone."""
    import boto3

    from tests.aws.moto_table import TABLE_NAME, dynamo_store
    from tests.perf.dynamodb_cost import Meter

    with dynamo_store(clock=FixedClock(NOW)) as store:
        recent = (NOW - timedelta(days=2)).strftime("%Y-%m-%dT%H")
        agent_items = {k: v for k, v in made.items()
                       if k.scope == ALL and (k.grain == DAY or k.period >= recent)}
        print(f"DynamoDB: {fill(store, agent_items, shards=True):,} items written")
        meter = Meter(TABLE_NAME, boto3.client("dynamodb"))
        meter.attach(store.client)
        units = {}
        agent = store.agents.get_agent(REF)
        assert agent is not None
        for span in RANGES:
            meter.reset()
            analytics(store, agent, Selection(span))
            units[span] = meter.rru
        return units


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--reads", type=int, default=50)
    args = parser.parse_args()
    made = traffic(args.events, args.days)
    hours = sum(1 for k in made if k.scope == ALL and k.grain == HOUR)
    print(f"{args.events:,} events over {args.days} days (and as many before): {len(made):,} "
          f"buckets, {hours:,} hours of the agent's")
    times = sqlite_times(made, args.reads)
    units = dynamodb_units(made)
    print(f"\n{'range':8}{'SQLite ms (median)':>20}{'DynamoDB RRU':>16}")
    for span in RANGES:
        print(f"{span:8}{times[span]:20.2f}{units[span]:16.1f}")


if __name__ == "__main__":
    main()
