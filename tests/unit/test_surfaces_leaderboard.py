"""Who ranks in which leaderboard, by what value, and how requests and DynamoDB keys read;
plus the SQLite ranking read being an index range, not a sort of every agent."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from bench_core.domain import stats
from bench_core.domain.errors import BadRequest
from bench_core.domain.models import Agent, AgentStats, iso
from bench_core.domain.ranking import (
    MAX_PAGE,
    MIN_RUNS,
    SORTS,
    Qualification,
    dynamo_rank_key,
    leaderboard_params,
    rank_values,
    search_text,
)
from bench_core.store.sqlite.store import SqliteStore

from tests.factories import BASE

RULE = Qualification()
NOW = BASE
"""The time ranks are computed at; the agents below were made two days before."""


def agent(runs: int = 20, successes: int = 15, *, cost: float = 0.2, evals: int = 0,
          score_sum: float = 0.0, timed: int | None = None, visibility: str = "public",
          made: timedelta = timedelta(days=2), **fields: Any) -> Agent:
    hist = stats.empty_histogram()
    hist[stats.bucket_index(300)] = runs if timed is None else timed
    return Agent(login="alice", slug="bot", visibility=visibility, created_at=iso(NOW - made),
                 stats=AgentStats(runs=runs, successes=successes, failures=runs - successes,
                                  cost_usd_total=cost, latency_hist=hist, eval_count=evals,
                                  eval_score_sum=score_sum), **fields)


def ranks(record: Agent) -> dict[str, float | None]:
    return rank_values(record, RULE, NOW)


def test_a_qualified_agent_ranks_everywhere() -> None:
    values = ranks(agent(evals=10, score_sum=8.0))
    assert values == {"runs": 20.0, "success": 0.75, "score": pytest.approx(0.8),
                      "cost": pytest.approx(0.01), "latency": stats.percentile(
                          agent().stats.latency_hist, 50)}


def test_the_minimum_runs_rule() -> None:
    few = ranks(agent(runs=MIN_RUNS - 1, successes=5, evals=MIN_RUNS - 1, score_sum=5))
    assert few == {"runs": float(MIN_RUNS - 1), "success": None, "score": None, "cost": None,
                   "latency": None}
    untimed = ranks(agent(timed=MIN_RUNS - 1))
    assert untimed["latency"] is None and untimed["success"] == 0.75
    assert ranks(agent(cost=0.0))["cost"] is None  # no reported cost is not "free"


def test_a_new_agent_ranks_nowhere_until_it_has_the_runs_and_the_day() -> None:
    day = timedelta(hours=RULE.min_age_hours)
    assert set(ranks(agent(runs=RULE.min_runs - 1, successes=1)).values()) == {None}
    assert ranks(agent(runs=RULE.min_runs, successes=1))["runs"] == RULE.min_runs
    assert ranks(agent(made=day))["runs"] == 20.0
    assert set(ranks(agent(made=day - timedelta(milliseconds=1))).values()) == {None}
    assert search_text(agent(made=timedelta(0))) is not None, "found by its name, not ranked"


def test_the_rule_is_the_deployments_own() -> None:
    eager = Qualification(min_runs=1, min_age_hours=0)
    assert rank_values(agent(runs=1, successes=1, made=timedelta(0)), eager, NOW)["runs"] == 1


def test_a_private_agent_ranks_nowhere_and_is_not_searchable() -> None:
    hidden = agent(visibility="private", evals=20, score_sum=10)
    assert set(ranks(hidden).values()) == {None}
    assert search_text(hidden) is None


def test_search_text_holds_names_framework_and_model_in_lower_case() -> None:
    text = search_text(agent(display_name="Research BOT", framework="LangChain", model="Llama-3"))
    assert text == "alice bot research bot langchain llama-3"


def test_dynamo_rank_keys_order_by_value_and_leave_ties_to_the_read() -> None:
    """Compared as DynamoDB compares numbers: by value to nine decimals; equal values (the
    runs tie-break) get equal keys, so a key moves only when its value does."""
    values = [0.9, 0.95, 0.5, 0.9000000001, 0.123456789]
    assert sorted(values, key=dynamo_rank_key) == sorted(values)
    assert dynamo_rank_key(0.9) == dynamo_rank_key(0.9000000001)
    assert dynamo_rank_key(None) is None
    assert dynamo_rank_key(1e-9).as_tuple().exponent == 0  # an exact integer
    assert len(str(dynamo_rank_key(3.6e6))) <= 38  # DynamoDB's precision


@pytest.mark.parametrize("sort, q, page, expected", [
    (None, None, None, ("runs", None, 1)),
    ("latency", "  LangChain   Agents ", "3", ("latency", "langchain agents", 3)),
    ("score", "", str(MAX_PAGE), ("score", None, MAX_PAGE)),
])
def test_leaderboard_params(sort, q, page, expected) -> None:
    assert leaderboard_params(sort, q, page) == expected


@pytest.mark.parametrize("sort, page", [("fast", None), (None, "0"), (None, "x"), (None, "-2"),
                                        (None, str(MAX_PAGE + 1)), (None, "²"), (None, "9" * 5000)])
def test_bad_leaderboard_params_are_400(sort, page) -> None:
    with pytest.raises(BadRequest):
        leaderboard_params(sort, None, page)


@pytest.mark.parametrize("query", [None, "bot"])
@pytest.mark.parametrize("sort", list(SORTS))
def test_sqlite_reads_each_ranking_from_its_index(tmp_path: Path, sort: str, query: str | None
                                                  ) -> None:
    """The statement the store runs, explained: a walk of the ranking's partial index in
    order, with no sort step (a TEMP B-TREE would mean ordering every candidate)."""
    store = SqliteStore.open(tmp_path / "bench.db")
    try:
        conn = store.db.reader()
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        store.leaderboard.leaderboard(sort, query=query, offset=25, limit=26)
        conn.set_trace_callback(None)
        (sql,) = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
        details = " ".join(row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + sql))
        assert f"USING INDEX agents_lb_{sort}" in details and "TEMP B-TREE" not in details
    finally:
        store.close()
