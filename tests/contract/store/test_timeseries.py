"""The Store contract for an agent's counters over time, on every adapter: what batches and
evals write through the real ingest and eval paths lands in the hour and the day each run
ended, for the agent, its version and its tags; a replay counts once; a read takes a range of
one scope and grain."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from bench_core.domain import stats
from bench_core.domain.models import AgentMeta, AgentRef, EvalResult, iso
from bench_core.domain.timeseries import ALL, DAY, HOUR, Bucket, BucketKey, ModelUse, scope_of
from bench_core.ports.store import Store

from tests.factories import clean, ev, task_events

REF = AgentRef("alice", "agent-1")
GPT_4O_CALL = 0.00725
"""1,000 input tokens (200 of them cached) and 500 output tokens of gpt-4o (as
test_ingest_evidence.py prices it)."""


def at(start: str, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`events` a second apart from `start`."""
    t0 = datetime.fromisoformat(start + "+00:00")
    return [{**e, "ts": iso(t0 + timedelta(seconds=i))} for i, e in enumerate(events)]


def run(task_id: str, *, tags: list[str] | None = None, evidence: bool = False,
        **fields: Any) -> list[dict[str, Any]]:
    start, *rest = task_events(task_id, **fields)
    end = {**rest[-1], "data": {"tags": tags} if tags else None}
    calls = [ev("task.log", task_id, data={
        "label": "evidence", "provider": "openai", "model": "gpt-4o", "input_tokens": 1000,
        "output_tokens": 500, "cache_read_input_tokens": 200})] if evidence else []
    return [start, *calls, *rest[:-1], end]


def ingest(store: Store, events: list[dict[str, Any]], version: str | None = "v1") -> None:
    store.ingest.ingest("alice", AgentMeta(slug="agent-1", version=version), clean(events))


def scored(score: float, at: str = "2026-12-03T12:00:00.000Z") -> EvalResult:
    return EvalResult(status="scored", judge="heuristic-v1", at=at, score=score,
                      reasoning="because", prompt_version="judge-v1#abc", attempts=1)


def test_runs_count_in_the_hour_and_day_they_ended(store: Store) -> None:
    ingest(store, at("2026-12-03T10:15:00", run("a", cost=0.5, duration_ms=100, evidence=True)
                     + run("b", status="failed", cost=0.25, duration_ms=4000)))
    ingest(store, at("2026-12-03T11:59:58", run("c", duration_ms=100, evidence=True)))
    hours = dict(store.timeseries.read_buckets(REF, ALL, HOUR, "2026-12-03T00",
                                               "2026-12-03T23"))
    assert list(hours) == ["2026-12-03T10", "2026-12-03T11", "2026-12-03T12"]
    eleven = hours["2026-12-03T11"]
    assert (eleven.runs, eleven.models[("openai", "gpt-4o")].calls) == (0, 1), \
        "c ended at 12:00:00; its call was stamped at 11:59:59"
    ten = hours["2026-12-03T10"]
    assert (ten.runs, ten.successes, ten.failures) == (2, 1, 1)
    assert ten.cost_usd == pytest.approx(0.75) and ten.success_cost_usd == pytest.approx(0.5)
    assert ten.evidence_cost_usd == pytest.approx(GPT_4O_CALL)
    assert ten.success_evidence_cost_usd == pytest.approx(GPT_4O_CALL)
    assert (ten.input_tokens, ten.output_tokens) == (1000, 500)
    assert ten.latency_hist[stats.bucket_index(4000)] == 1 and sum(ten.latency_hist) == 2
    assert ten.models == {("openai", "gpt-4o"): ModelUse(1, 1000, 500, pytest.approx(GPT_4O_CALL))}
    (day,) = store.timeseries.read_buckets(REF, ALL, DAY, "2026-12-03", "2026-12-03")
    assert day[0] == "2026-12-03"
    assert (day[1].runs, day[1].successes, day[1].models[("openai", "gpt-4o")].calls) == (3, 2, 2)


def test_a_run_counts_for_its_version_and_its_first_two_tags(store: Store) -> None:
    ingest(store, at("2026-12-03T10:00:00", run("a", tags=["prod", "eu", "prod", "x", "y"])),
           version="v1")
    ingest(store, at("2026-12-03T10:10:00", run("b", tags=["prod"])), version="v2")
    ingest(store, at("2026-12-03T10:20:00", run("c")), version=None)

    def runs(scope: str) -> int:
        return sum(b.runs for _, b in store.timeseries.read_buckets(
            REF, scope, DAY, "2026-12-01", "2026-12-31"))
    assert runs(ALL) == 3
    assert (runs(scope_of(version="v1")), runs(scope_of(version="v2"))) == (1, 1)
    assert (runs(scope_of(tag="prod")), runs(scope_of(tag="eu"))) == (2, 1)
    assert runs(scope_of(tag="x")) == 0, "a run's first two distinct tags get a series"
    assert store.timeseries.read_buckets(REF, scope_of(tag="prod"), HOUR, "2026-12-03T00",
                                         "2026-12-03T23") == [], "a tag's by day only"
    assert runs(scope_of(version="v")) == 0, "a version's range holds that version alone"


def test_the_runs_of_one_batch_count_each_where_it_ended(store: Store) -> None:
    """A batch's runs are summed by hour, version and tags before their buckets: runs of one
    batch that differ in any of the three still count apart (a run keeps the version it
    started under)."""
    ingest(store, at("2026-12-03T09:00:00", task_events("old")[:1]), version="v1")
    ingest(store, at("2026-12-03T10:59:57", run("a", tags=["prod"], duration_ms=100)
                     + run("b", status="failed", duration_ms=4000)
                     + run("old", tags=["eu"], duration_ms=900)[1:]), version="v2")

    def counted(scope: str, grain: str, period: str) -> tuple[int, int, int]:
        found = store.timeseries.read_buckets(REF, scope, grain, period, period)
        return (found[0][1].runs, found[0][1].failures, sum(found[0][1].latency_hist)
                ) if found else (0, 0, 0)
    assert counted(ALL, HOUR, "2026-12-03T10") == (1, 0, 1)
    assert counted(ALL, HOUR, "2026-12-03T11") == (2, 1, 2)
    assert counted(ALL, DAY, "2026-12-03") == (3, 1, 3)
    assert counted(scope_of(version="v2"), HOUR, "2026-12-03T10") == (1, 0, 1)
    assert counted(scope_of(version="v2"), HOUR, "2026-12-03T11") == (1, 1, 1)
    assert counted(scope_of(version="v1"), HOUR, "2026-12-03T11") == (1, 0, 1)
    assert counted(scope_of(version="v1"), DAY, "2026-12-03") == (1, 0, 1)
    assert counted(scope_of(tag="prod"), DAY, "2026-12-03") == (1, 0, 1)
    assert counted(scope_of(tag="eu"), DAY, "2026-12-03") == (1, 0, 1)


def test_a_replayed_batch_and_a_subtask_count_no_run(store: Store) -> None:
    events = at("2026-12-03T10:00:00", run("a") + task_events("child", parent="a"))
    ingest(store, events)
    ingest(store, events)
    (hour,) = store.timeseries.read_buckets(REF, ALL, HOUR, "2026-12-03T10", "2026-12-03T10")
    assert hour[1].runs == 1


def test_a_score_counts_where_its_run_ended_once_per_run(store: Store) -> None:
    ingest(store, at("2026-12-02T23:59:00", run("a", tags=["prod"]) + run("b")))
    assert store.evals.record_eval(REF, "a", scored(0.9))
    assert store.evals.record_eval(REF, "a", scored(0.5)), "a rescore replaces, once"
    assert store.evals.record_eval(REF, "b", scored(0.3))
    for scope, count, total in ((ALL, 2, 0.8), (scope_of(version="v1"), 2, 0.8),
                                (scope_of(tag="prod"), 0, 0.0)):
        (day,) = store.timeseries.read_buckets(REF, scope, DAY, "2026-12-02", "2026-12-03")
        assert day[0] == "2026-12-02", "where the run ended, not when it was judged"
        # a tag's series has no score: tags are content, not where every store's eval reads
        assert (day[1].eval_count, day[1].eval_score_sum) == (count, pytest.approx(total))


def test_buckets_added_whole_add_up_and_read_by_range(store: Store) -> None:
    ingest(store, at("2026-12-01T00:00:00", run("seed")))
    hist = stats.empty_histogram()
    hist[stats.bucket_index(250)] = 3
    one = Bucket(runs=3, successes=2, cost_usd=0.3, eval_count=1, eval_score_sum=0.75,
                 latency_hist=hist, models={("anthropic", "claude"): ModelUse(2, 10, 20, 0.01)})
    store.timeseries.add_buckets(REF, {BucketKey(ALL, DAY, d): one
                                       for d in ("2026-11-01", "2026-11-02", "2026-11-03")})
    store.timeseries.add_buckets(REF, {BucketKey(ALL, DAY, "2026-11-02"): one})
    store.timeseries.add_buckets(REF, {BucketKey(scope_of(version="v9"), DAY, "2026-11-02"): one})
    days = store.timeseries.read_buckets(REF, ALL, DAY, "2026-11-02", "2026-11-03")
    assert [d for d, _ in days] == ["2026-11-02", "2026-11-03"], "both ends included"
    twice = days[0][1]
    assert (twice.runs, twice.successes, twice.eval_count) == (6, 4, 2)
    assert twice.cost_usd == pytest.approx(0.6) and twice.latency_hist[stats.bucket_index(250)] == 6
    assert twice.models == {("anthropic", "claude"): ModelUse(4, 20, 40, pytest.approx(0.02))}
    assert store.timeseries.read_buckets(AgentRef("alice", "nobody"), ALL, DAY, "2026-11-01",
                                         "2026-11-30") == []


def test_runs_far_apart_in_time_are_written_and_scored_whole(store: Store) -> None:
    """One batch and one round of evals over 40 runs, each in an hour of its own: on DynamoDB
    more bucket items than one transaction holds, so the batch and the round are split."""
    events = [e for i in range(40) for e in at(f"2026-12-0{1 + i // 24}T{i % 24:02d}:00:00",
                                                run(f"r{i}", tags=[f"t{i}", f"u{i}"]))]
    ingest(store, events)
    assert store.evals.record_evals(REF, {f"r{i}": scored(0.5) for i in range(40)}) == \
        {f"r{i}" for i in range(40)}
    hours = store.timeseries.read_buckets(REF, ALL, HOUR, "2026-12-01T00", "2026-12-02T23")
    assert len(hours) == 40
    assert all((b.runs, b.eval_count) == (1, 1) for _, b in hours)
    assert sum(b.runs for _, b in store.timeseries.read_buckets(
        REF, scope_of(tag="u39"), DAY, "2026-12-01", "2026-12-02")) == 1


def test_the_squares_of_cheap_runs_costs_keep_their_digits(store: Store) -> None:
    """A $0.0003 run's cost squared is 9e-8 dollars squared: every store keeps it, and a second
    batch adds to it, so a cheap agent's cost has a spread to test (`domain.monitors`)."""
    ingest(store, at("2026-12-03T10:15:00", run("a", cost=0.0003) + run("b", cost=0.0001)))
    ingest(store, at("2026-12-03T10:20:00", run("c", cost=0.0002)))
    (_, hour), = store.timeseries.read_buckets(REF, ALL, HOUR, "2026-12-03T10", "2026-12-03T10")
    assert hour.squared_runs == 3
    assert hour.cost_sq_usd == pytest.approx(0.0003 ** 2 + 0.0001 ** 2 + 0.0002 ** 2, rel=1e-6)


def test_the_agents_active_in_a_range_of_hours_listed_or_not_a_page_at_a_time(
        store: Store) -> None:
    """Every agent with anything counted in an hour of the range (a run ended there, or a
    model call priced), private ones too, in (login, slug) order and a page at a time; one
    whose runs ended before the range is not among them."""
    def send(login: str, slug: str, start: str, events: list[dict[str, Any]]) -> None:
        store.ingest.ingest(login, AgentMeta(slug=slug), clean(at(start, events)))

    send("bob", "quiet", "2026-12-03T07:10:00", run("q"))
    send("bob", "private", "2026-12-03T09:20:00", run("p0"))
    assert store.agents.update_agent(AgentRef("bob", "private"), {"visibility": "private"})
    send("bob", "private", "2026-12-03T09:30:00", run("p"))
    send("alice", "agent-1", "2026-12-03T10:15:00", run("a"))
    send("alice", "agent-1", "2026-12-03T11:15:00", run("b"))
    send("alice", "b-agent", "2026-12-03T11:59:58", run("c", evidence=True))
    send("carol", "x", "2026-12-03T08:59:00", run("open")[:1] + run("late")[:1])
    everyone = [AgentRef("alice", "agent-1"), AgentRef("alice", "b-agent"),
                AgentRef("bob", "private")]
    assert store.timeseries.active_agents("2026-12-03T09", "2026-12-03T12") == everyone
    assert store.timeseries.active_agents("2026-12-03T09", "2026-12-03T12", limit=2) == \
        everyone[:2]
    assert store.timeseries.active_agents("2026-12-03T09", "2026-12-03T12",
                                          after=everyone[1], limit=2) == everyone[2:]
    assert store.timeseries.active_agents("2026-12-03T09", "2026-12-03T12",
                                          after=everyone[2]) == []
    assert store.timeseries.active_agents("2026-12-03T11", "2026-12-03T11") == \
        [AgentRef("alice", "agent-1"), AgentRef("alice", "b-agent")], \
        "b-agent's model call was priced at 11:59:59, its run ended at 12:00:00"
    assert store.timeseries.active_agents("2026-12-03T13", "2026-12-03T15") == []
