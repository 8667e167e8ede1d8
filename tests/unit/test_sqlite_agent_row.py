"""An agent's row read back: `agent_from_row` reads and makes it by position."""

from __future__ import annotations

from bench_core.domain.models import Agent, AgentStats, RunRef
from bench_core.store.sqlite.agents import AGENT_COLS, agent_from_row


def test_a_row_is_read_into_the_field_of_each_column() -> None:
    """Each column of a row of distinct values lands in its own field (the dataclasses'
    order is not the columns'), and a wider row's extra columns are left alone."""
    values = {
        "login": "alice", "slug": "bot", "display_name": "Bot", "model": "gpt-4o",
        "framework": "langchain", "architecture": "react", "tools": '["search"]',
        "visibility": "unlisted", "hide_inputs": 1, "hide_outputs": 0,
        "created_at": "2026-01-01T00:00:00.000Z", "runs": 11, "successes": 7, "failures": 4,
        "cost_usd_total": 1.25, "latency_hist": "[0, 3, 1]",
        "first_event_at": "2026-01-02T00:00:00.000Z",
        "last_event_at": "2026-01-03T00:00:00.000Z", "eval_count": 5, "eval_score_sum": 3.5,
        "dropped_events": 2, "eval_unscored": 6, "eval_skipped": 8, "eval_judge": "heuristic-v1",
        "judge_tokens": 900, "judge_cost_usd": 0.25, "judge_daily_budget_usd": 0.75,
        "judge_sample_rate": 0.5, "evidence_cost_usd_total": 2.5, "evidence_input_tokens": 300,
        "evidence_output_tokens": 80, "evidence_calls": 9, "evidence_unpriced_calls": 1,
        "expires_at": "2026-02-01T00:00:00.000Z",
        "latest_run": '{"run_id": "r2", "name": "plan", "status": "success", "at": "t2"}',
        "latest_failure": '{"run_id": "r1", "name": "plan", "status": "failed", "at": "t1"}'}
    assert list(values) == AGENT_COLS.split(", ")
    assert agent_from_row((*values.values(), "lb_text", 0.5)) == Agent(
        login="alice", slug="bot", display_name="Bot", model="gpt-4o", framework="langchain",
        architecture="react", tools=["search"], visibility="unlisted", hide_inputs=True,
        hide_outputs=False, created_at="2026-01-01T00:00:00.000Z",
        stats=AgentStats(
            runs=11, successes=7, failures=4, cost_usd_total=1.25, latency_hist=[0, 3, 1],
            first_event_at="2026-01-02T00:00:00.000Z",
            last_event_at="2026-01-03T00:00:00.000Z", eval_count=5, eval_score_sum=3.5,
            dropped_events=2, eval_unscored=6, eval_skipped=8, eval_judge="heuristic-v1",
            judge_tokens=900, judge_cost_usd=0.25, evidence_cost_usd_total=2.5,
            evidence_input_tokens=300, evidence_output_tokens=80, evidence_calls=9,
            evidence_unpriced_calls=1, latest_run=RunRef("r2", "plan", "success", "t2"),
            latest_failure=RunRef("r1", "plan", "failed", "t1")),
        judge_daily_budget_usd=0.75, judge_sample_rate=0.5,
        expires_at="2026-02-01T00:00:00.000Z")
