"""The judge budget: which finished tasks are judged, so judging stays affordable.

Judging every task is the product's promise and its main running cost. Two owner settings per
agent bound it (defaults in `JudgeSettings`): a sampling rate, applied by a hash of the task so
that a re-run decides the same way, and a daily budget in USD, checked against what the judge
has already spent on the agent today. A task left out is recorded as `skipped` (never as
unscored), and the profile shows what share of runs was judged.

The check happens at ingest, before any eval starts (a run left out costs no workflow), and
again for runs the sweep restarts; the spend is recorded after judging, so the evals in flight
can overshoot a budget by the runs they judge (a batch's at most); that bounded slack avoids a
lock per task.
"""

from __future__ import annotations

import hashlib

from .models import Agent, EvalResult

BUDGET = "budget"
"""Who decided a skip: the budget, not a judge (`EvalResult.judge` of a skipped run)."""


def budget_of(agent: Agent, daily_budget_usd: float, sample_rate: float) -> tuple[float, float]:
    """(daily budget in USD, sampling rate) in force for `agent`, given the deployment's."""
    budget = agent.judge_daily_budget_usd
    rate = agent.judge_sample_rate
    return (daily_budget_usd if budget is None else budget,
            sample_rate if rate is None else rate)


def sampled(agent: Agent, task_id: str, rate: float) -> bool:
    """Deterministic: the same task is always in or out at the same rate."""
    if rate >= 1:
        return True
    digest = hashlib.sha256(f"{agent.login}/{agent.slug}/{task_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


def skip_reason(agent: Agent, task_id: str, spent_today_usd: float, *,
                daily_budget_usd: float, sample_rate: float) -> str | None:
    """None if the task is to be judged, else why it is skipped (the deployment's budget and
    rate apply where the agent sets none)."""
    budget, rate = budget_of(agent, daily_budget_usd, sample_rate)
    if not sampled(agent, task_id, rate):
        return f"not sampled (judge sample rate {rate:g})"
    if spent_today_usd >= budget:
        return f"daily judge budget of ${budget:.2f} spent (${spent_today_usd:.4f} today)"
    return None


def skipped(agent: Agent, task_id: str, spent_today_usd: float, at: str, *,
            daily_budget_usd: float, sample_rate: float) -> EvalResult | None:
    """The result of a task the budget leaves out, stamped `at`; None if it is judged."""
    reason = skip_reason(agent, task_id, spent_today_usd, daily_budget_usd=daily_budget_usd,
                         sample_rate=sample_rate)
    return None if reason is None else EvalResult(status="skipped", judge=BUDGET, at=at,
                                                  reason=reason)
