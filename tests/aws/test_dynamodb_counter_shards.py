"""An agent's counters on DynamoDB live on counter shards (`store/dynamodb/codec/agents.py`):
concurrent batches and evals of one agent count exactly once each, no transaction touches its
`META` item, and the hot agent of the load model has no item over DynamoDB's limits."""

from __future__ import annotations

from typing import Any

import pytest
from bench_core.domain.models import AgentMeta, AgentRef, EvalResult

from tests.aws.moto_table import dynamo_store
from tests.concurrency import in_parallel
from tests.factories import clean, day_old, task_events

REF = AgentRef("alice", "busy")
SENDERS = 8
RUNS = 5


def judged(score: float, judge: str) -> EvalResult:
    return EvalResult(status="scored", score=score, judge=judge, reasoning="ok", attempts=1,
                      at="2026-01-01T00:00:00.000Z")


def test_concurrent_batches_and_evals_of_one_agent_count_exactly_without_touching_meta() -> None:
    with dynamo_store() as store:
        store.agents.create_agent(day_old(REF.login, REF.slug))
        first = [e for i in range(RUNS) for e in task_events(f"early-{i}")]
        store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), clean(first))
        transacted: list[str] = []

        def record(model: Any, params: dict[str, Any], **_: Any) -> None:
            if model.name == "TransactWriteItems":
                transacted.extend(next(iter(a.values()))["Key"]["sk"]["S"]
                                  for a in params["TransactItems"] if "Key" in next(iter(a.values())))

        store.client.meta.events.register("before-parameter-build.dynamodb", record)

        def send(n: int) -> Any:
            events = [e for i in range(RUNS)
                      for e in task_events(f"s{n}-{i}", status="failed" if i == 0 else "success")]
            return store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), clean(events))

        def judge(i: int) -> Any:
            return store.evals.record_eval(REF, f"early-{i}", judged(0.5, f"judge-{i % 2}"))

        in_parallel(*(lambda n=n: send(n) for n in range(SENDERS)),
                    *(lambda i=i: judge(i) for i in range(RUNS)))
        stats = store.agents.get_agent(REF).stats
        assert (stats.runs, stats.successes, stats.failures) == (
            RUNS * (SENDERS + 1), RUNS * SENDERS + RUNS - SENDERS, SENDERS)
        assert sum(stats.latency_hist) == stats.runs
        assert (stats.eval_count, stats.eval_score_sum) == (RUNS, pytest.approx(0.5 * RUNS))
        assert stats.eval_judge == "mixed"
        assert transacted and "META" not in transacted
        assert stats.latest_run is not None and stats.latest_run.run_id.startswith("s")


def test_a_replayed_batch_after_a_crash_still_counts_once_across_shards() -> None:
    """A batch sent twice lands on two shards' draws, and counts once."""
    with dynamo_store() as store:
        events = [e for i in range(RUNS) for e in task_events(f"r{i}")]
        for _ in range(3):
            store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), clean(events))
        assert store.agents.get_agent(REF).stats.runs == RUNS


@pytest.mark.slow
def test_the_hot_agents_meta_and_counter_items_stay_under_the_limits() -> None:
    """The load model, measured on moto: the hot agent (2,000 events/s) has no item over
    1,000 WCU/s, and its `META` and counter shards take fewer than `TX_HOT` transactions a
    second."""
    from tests.perf.load_model import TX_HOT, WCU_LIMIT, Mix, measure, scenario

    hots = scenario(measure(agents=1, reps=3), Mix(), everyone=False)
    items = [h for h in hots if h.key[0] == "I"]
    assert items and all(h.wcu <= WCU_LIMIT for h in items)
    agent_items = [h for h in items if h.key[2].startswith("META")]
    assert {h.key[2] for h in agent_items} >= {"META#C{n}"}
    assert all(h.tx < TX_HOT for h in agent_items), [(h.key, h.tx) for h in agent_items]


def test_an_agent_counted_before_the_shards_keeps_its_counts_as_their_base() -> None:
    """Counters, a day and a judge label on the items of the older layout are read as they are
    and added to: nothing needs migrating."""
    from tests.factories import ts

    with dynamo_store() as store:
        store.agents.create_agent(day_old(REF.login, REF.slug))
        day = ts(0)[:10]
        store.client.update_item(
            TableName=store.table_name, Key={"pk": {"S": "AGENT#alice#busy"}, "sk": {"S": "META"}},
            UpdateExpression="SET #r = :r, #s = :s, #f = :f, #j = :j, #l = :l",
            ExpressionAttributeNames={"#r": "runs", "#s": "successes", "#f": "failures",
                                      "#j": "eval_judge", "#l": "last_event_at"},
            ExpressionAttributeValues={":r": {"N": "3"}, ":s": {"N": "2"}, ":f": {"N": "1"},
                                       ":j": {"S": "judge-0"}, ":l": {"S": ts(-1_000)}})
        store.client.put_item(TableName=store.table_name, Item={
            "pk": {"S": "AGENT#alice#busy"}, "sk": {"S": f"DAY#{day}"}, "runs": {"N": "3"},
            "successes": {"N": "2"}, "failures": {"N": "1"}, "cost_usd": {"N": "0.5"}})
        store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug),
                            clean([e for i in range(RUNS) for e in task_events(f"n{i}")]))
        store.evals.record_eval(REF, "n0", judged(0.5, "judge-0"))
        stats = store.agents.get_agent(REF).stats
        assert (stats.runs, stats.successes, stats.failures) == (3 + RUNS, 2 + RUNS, 1)
        assert stats.eval_judge == "judge-0" and stats.last_event_at > ts(-1_000)
        (today,) = [d for d in store.ingest.daily(REF, day) if d["day"] == day]
        assert (today["runs"], today["failures"]) == (3 + RUNS, 1)


def test_the_owners_listing_shows_the_numbers_the_profile_shows_after_the_last_batch() -> None:
    """Batches closer together than the rank refresh leave the ranked snapshot behind; the
    owner's listing reads the counters themselves, as the profile does."""
    from datetime import UTC, datetime

    from bench_core.clock import FixedClock

    with dynamo_store(clock=FixedClock(datetime(2026, 3, 1, 12, tzinfo=UTC))) as store:
        for n in range(3):  # the clock stands still: only the first batch may re-rank
            store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug),
                                clean([e for i in range(RUNS) for e in task_events(f"b{n}-{i}")]))
        profile = store.agents.get_agent(REF)
        (listed,) = store.agents.list_agents(REF.login)
        assert profile is not None and profile.stats.runs == 3 * RUNS
        assert listed.stats.runs == profile.stats.runs
        assert listed.stats.last_event_at == profile.stats.last_event_at


def test_an_agent_sending_every_five_seconds_is_ranked_again_once_in_thirty() -> None:
    """A rank refresh rewrites `META` and its moved rank keys (some 8 write units): an
    OpenTelemetry exporter's batches, 5 s apart, pay it once in `RANK_EVERY`, not each."""
    from datetime import UTC, datetime, timedelta

    from bench_core.clock import FixedClock

    clock = FixedClock(datetime(2026, 3, 1, 12, tzinfo=UTC))
    with dynamo_store(clock=clock) as store:
        store.agents.create_agent(day_old(REF.login, REF.slug))
        store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug),  # ranks it: a day old, 5 runs
                            clean([e for i in range(RUNS) for e in task_events(f"first-{i}")]))
        ranks: list[str] = []

        def note(model: Any, params: dict[str, Any], **_: Any) -> None:
            if model.name == "UpdateItem" and params["Key"]["sk"]["S"] == "META":
                ranks.append(params["Key"]["sk"]["S"])

        store.client.meta.events.register("before-parameter-build.dynamodb", note)
        for n in range(12):  # a minute of exports
            clock.advance(timedelta(seconds=5))
            store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug),
                                clean([e for i in range(RUNS) for e in task_events(f"b{n}-{i}")]))
        assert len(ranks) == 2, ranks
        agent = store.agents.get_agent(REF)
        assert agent is not None and agent.stats.runs == 13 * RUNS
