"""What an evaluation result does to its task and agent: the rules both stores apply atomically.

- A result replaces the task's previous one unless that would lose a score: a scored result is
  never replaced by a skip or an unscored retry (a sweep racing a finished eval changes nothing).
- The agent's average is `eval_score_sum / eval_count` over runs (root tasks): a replaced score
  is taken out before the new one goes in, so a re-run never counts twice.
- Judge tokens and cost are spent whenever the judge was asked, replaced or not: they are money.
- A failed or low-scored run makes the agent due for re-clustering.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .models import AgentRef, EvalResult

LOW_SCORE = 0.5
"""Runs scored below this join failed runs as material for failure clusters."""
MIXED = "mixed"


def replaces(new: EvalResult, old: EvalResult | None) -> bool:
    return old is None or new.status == "scored" or old.status != "scored"


@dataclass(frozen=True)
class EvalDelta:
    """Counter changes on the agent for replacing `old` by `new` on one of its tasks."""

    eval_count: int = 0
    eval_score_sum: float = 0.0
    eval_unscored: int = 0
    eval_skipped: int = 0
    judge_tokens: int = 0
    judge_cost_usd: float = 0.0


def eval_delta(new: EvalResult, old: EvalResult | None, *, is_run: bool) -> EvalDelta:
    spent: dict[str, Any] = {"judge_tokens": new.input_tokens + new.output_tokens, "judge_cost_usd": new.cost_usd}
    if not is_run:
        return EvalDelta(**spent)
    counts: dict[str, Any] = {"eval_count": 0, "eval_score_sum": 0.0, "eval_unscored": 0, "eval_skipped": 0}
    for result, sign in ((old, -1), (new, 1)):
        if result is None:
            continue
        if result.status == "scored":
            counts["eval_count"] += sign
            counts["eval_score_sum"] += sign * (result.score or 0.0)
        else:
            counts[f"eval_{result.status}"] += sign
    return EvalDelta(**counts, **spent)


def merged_judge(current: str | None, new: EvalResult) -> str | None:
    """The label of an agent's average after adding `new`: one judge's name, or "mixed"."""
    if new.status != "scored":
        return current
    return new.judge if current in (None, new.judge) else MIXED


def makes_cluster_due(task_status: str, result: EvalResult) -> bool:
    return task_status == "failed" or (result.status == "scored" and (result.score or 0.0) < LOW_SCORE)


def by_agent(pending: Iterable[tuple[AgentRef, str]]) -> list[tuple[AgentRef, list[str]]]:
    """Pending runs, oldest first, as one group per agent in the order each first appears:
    how a store that knows no queued groups hands them to the sweep."""
    groups: dict[AgentRef, list[str]] = {}
    for ref, task_id in pending:
        groups.setdefault(ref, []).append(task_id)
    return list(groups.items())
