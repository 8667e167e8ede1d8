"""The judge budget: which finished tasks are judged, so judging stays affordable.

Judging every task is the product's promise and its main running cost. Two owner settings per
agent bound it (defaults in `JudgeSettings`): a sampling rate, applied by a hash of the task so
that a re-run decides the same way, and a daily budget in USD, checked against what the judge
has already spent on the agent today. A task left out is recorded as `skipped` (never as
unscored), and the profile shows what share of runs was judged.

The check happens before judging and the spend is recorded after, so parallel evaluations can
overshoot a budget by at most one judgement each; that bounded slack avoids a lock per task.
"""

from __future__ import annotations

import hashlib

from ..domain.models import Agent
from ..settings import JudgeSettings


def budget_of(agent: Agent, defaults: JudgeSettings) -> tuple[float, float]:
    """(daily budget in USD, sampling rate) in force for `agent`."""
    budget = agent.judge_daily_budget_usd
    rate = agent.judge_sample_rate
    return (defaults.daily_budget_usd if budget is None else budget,
            defaults.sample_rate if rate is None else rate)


def sampled(agent: Agent, task_id: str, rate: float) -> bool:
    """Deterministic: the same task is always in or out at the same rate."""
    if rate >= 1:
        return True
    digest = hashlib.sha256(f"{agent.login}/{agent.slug}/{task_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


def skip_reason(agent: Agent, task_id: str, spent_today_usd: float,
                defaults: JudgeSettings) -> str | None:
    """None if the task is to be judged, else why it is skipped."""
    budget, rate = budget_of(agent, defaults)
    if not sampled(agent, task_id, rate):
        return f"not sampled (judge sample rate {rate:g})"
    if spent_today_usd >= budget:
        return f"daily judge budget of ${budget:.2f} spent (${spent_today_usd:.4f} today)"
    return None
