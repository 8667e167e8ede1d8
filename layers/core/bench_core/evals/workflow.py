"""EvalWorkflow: the runs one batch finished, judged together, as two steps over a JSON-able
state.

    judge ──▶ record ──▶ done

The runs the judge budget leaves out never get here: ingest records them `skipped` before
it starts the workflow (`ingest/pipeline.py` `queue_evals`), and hands over whether the agent
hides its content (`private`), so the workflow reads neither the agent nor the spend again.

- `judge` reads each task and decides: nothing to do (unknown, unfinished or already judged
  task), skip (the budget again, for runs the sweep restarts), unscored without asking
  (`NO_CONTENT`: a successful run whose input and output were not captured says nothing about
  its quality), or judge, asking the judge for those side by side. A run left unscored for
  `NO_CONTENT` is judged when its content arrives later (OTLP log events), on its root or any
  of its spans. A run whose root holds no content is judged on its spans' conversation
  (`conversation.py`), and its verdict says so. A judge that cannot
  be reached for any of them raises `LLMUnavailable`: no result is written, and the caller
  retries with backoff (the worker pool; on AWS the eval queue, for up to two days: `queue.py`).
  Reached for some, the others are left `later`.
- `record` writes every result (perhaps none) in one store call (`record_evals`: on DynamoDB one
  transaction for the batch, written against the tasks as `judge` read them), clearing the
  batch's pending mark if it has one (`marked`: the sweep queued it again); the runs left `later` say
  so in the outcomes, and whoever ran the steps asks again later (the eval queue delivers the
  message again: `queue.py`). Reasoning written while the agent hides inputs or outputs is
  stored as private. A scored run that people have given feedback on is then counted in the
  judge's agreement with them (`agreement.py`: one read for the batch when the agent was never
  given feedback).

Each step returns the state with `next` naming the following step; `run_eval` runs them all
in this process (the local worker pool, and EvalFunction on AWS).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from ..domain.judge_budget import skipped
from ..domain.models import NO_CONTENT, AgentRef, EvalResult, TaskState, from_fields, iso
from ..domain.task_text import is_empty
from ..ports.llm import LLMUnavailable
from ..ports.services import (
    WithAgents,
    WithClock,
    WithEvals,
    WithFeedback,
    WithIngest,
    WithJudge,
    WithRuns,
    WithSettings,
)
from ..ports.workflows import State, parse_agent
from .agreement import pair_judged
from .conversation import NOTE, run_conversation

DONE = "done"
LEFT_FOR_LATER = "left for later"
"""A run's outcome when the judge could not be reached for it (others were judged)."""
JUDGES_AT_ONCE = 32
"""Judge calls in flight together: every run of a Step Functions execution at once
(`workflows.stepfunctions.RUNS_PER_EVAL`), so the Judge step lasts one judgement."""
_READ = ("parent_task_id", "status", "started_at", "ended_at", "eval_version", "agent_version")
"""What `record` needs of a task as `judge` read it (and its eval), carried in the state."""


class EvalConcerns(WithAgents, WithIngest, WithRuns, WithEvals, WithFeedback, Protocol):
    """The agent and its task judged (and its run's spans, where the root holds no content),
    where the result and the day's spend go, and the run's feedback to pair it with."""


class EvalPorts(WithJudge, WithSettings, WithClock, Protocol):
    """What the eval steps use: the store, the judge (built on first use, so a step that does
    not judge never opens the model) and the settings (the judge's budget)."""

    @property
    def store(self) -> EvalConcerns: ...


def judge(ports: EvalPorts, state: State) -> State:
    ref = parse_agent(state["agent"])
    task_ids = state.get("task_ids") or [state["task_id"]]  # one run: a state from before batches
    private = state.get("private")
    agent = None
    if private is None or state.get("force"):
        agent = ports.store.agents.get_agent(ref)
        if agent is None:
            return {**state, "next": DONE, "outcomes": dict.fromkeys(task_ids, "no agent")}
        private = agent.hide_inputs or agent.hide_outputs
    now = ports.clock.now()
    spent = (None if agent is None
             else ports.store.evals.judge_spend(ref, iso(now)[:10]))
    judging = ports.settings.judge
    results: dict[str, EvalResult] = {}
    read: dict[str, TaskState] = {}
    outcomes: dict[str, str] = {}
    asked: list[TaskState] = []
    stand_ins: set[str] = set()
    for task_id in task_ids:
        task = _finished_task(ports.store, ref, task_id)
        if task is None or not task.finished:
            outcomes[task_id] = "no finished task to judge"
            continue
        if not _due(task, bool(state.get("force"))):
            outcomes[task_id] = f"already {task.eval.status if task.eval else 'judged'}"
            continue
        read[task_id] = task
        judged = task if _captured(task) else run_conversation(ports.store, ref, task)
        if judged is None:
            results[task_id] = EvalResult(status="unscored", judge=ports.judge.label,
                                          at=iso(now), reason=NO_CONTENT)
        elif agent is not None and spent is not None and (skip := skipped(
                agent, task_id, spent, iso(now), daily_budget_usd=judging.daily_budget_usd,
                sample_rate=judging.sample_rate)):
            results[task_id] = skip
        else:
            asked.append(judged)
            if judged is not task:
                stand_ins.add(task_id)
    verdicts = _ask(ports, asked)
    for task_id in stand_ins & verdicts.keys():
        verdicts[task_id].reasoning = " ".join(filter(None, (NOTE, verdicts[task_id].reasoning)))
    later = [task.task_id for task in asked if task.task_id not in verdicts]
    if later and not verdicts and not results:
        raise LLMUnavailable(f"the judge could not be reached for {len(later)} runs")
    results |= verdicts
    outcomes |= dict.fromkeys(later, LEFT_FOR_LATER)
    return {**state, "next": "record", "private": private, "later": later, "outcomes": outcomes,
            "results": {task_id: r.to_dict() for task_id, r in results.items()},
            "read": {task_id: _facts(read[task_id]) for task_id in results}}


def _finished_task(store: EvalConcerns, ref: AgentRef, task_id: str) -> TaskState | None:
    """The run to judge, read as it was a moment ago (half the read units on DynamoDB), and
    read again as it is when that shows it unfinished: the batch that finished it was
    acknowledged before its eval began, so only a lagging read can miss its end. (A lagging
    read that misses an eval recorded since is caught where the result is recorded, guarded
    by the eval it was read with.)"""
    task = store.ingest.get_task(ref, task_id, consistent=False)
    if task is None or not task.finished:
        task = store.ingest.get_task(ref, task_id)
    return task


def _due(task: TaskState, force: bool) -> bool:
    """Whether a finished task still wants a result: none yet, a re-judging asked for, or an
    unscored one whose content may have arrived since (on it or on its spans)."""
    waited_for_content = task.eval is not None and task.eval.reason == NO_CONTENT
    return task.eval is None or force or waited_for_content


def _captured(task: TaskState) -> bool:
    return task.status == "failed" or not (is_empty(task.input) and is_empty(task.output))


def _ask(ports: EvalPorts, tasks: list[TaskState]) -> dict[str, EvalResult]:
    """The judge's verdicts, side by side; a task the judge could not be reached for has none."""
    def one(task: TaskState) -> EvalResult | None:
        try:
            return ports.judge.judge(task)
        except LLMUnavailable:
            return None

    if not tasks:
        return {}
    with ThreadPoolExecutor(max_workers=min(JUDGES_AT_ONCE, len(tasks))) as pool:
        verdicts = list(pool.map(one, tasks))
    return {task.task_id: v for task, v in zip(tasks, verdicts, strict=True) if v is not None}


def _facts(task: TaskState) -> dict[str, Any]:
    return {**{name: getattr(task, name) for name in _READ},
            "eval": None if task.eval is None else task.eval.to_dict()}


def _task(task_id: str, facts: dict[str, Any]) -> TaskState:
    old = facts.get("eval")
    fields = {name: facts[name] for name in _READ if facts.get(name) is not None}
    return from_fields(TaskState, {**fields, "task_id": task_id,
                                   "eval": None if old is None else EvalResult.from_dict(old)})


def record(ports: EvalPorts, state: State) -> State:
    ref = parse_agent(state["agent"])
    task_ids = state.get("task_ids") or [state["task_id"]]
    results = {task_id: EvalResult.from_dict(r) for task_id, r in state["results"].items()}
    for result in results.values():
        result.private = bool(state.get("private"))
    read = {task_id: _task(task_id, facts) for task_id, facts in state.get("read", {}).items()}
    stored = ports.store.evals.record_evals(ref, results, read=read,
                                            queued=task_ids if state.get("marked") else ())
    pair_judged(ports.store, ref, {task_id: results[task_id] for task_id in stored})
    outcomes = {**state.get("outcomes", {}),
                **{task_id: result.status if task_id in stored else "kept the earlier result"
                   for task_id, result in results.items()}}
    return {"agent": state["agent"], "task_ids": task_ids, "next": DONE, "outcomes": outcomes}


STEPS: dict[str, Callable[[EvalPorts, State], State]] = {"judge": judge, "record": record}
"""The steps in order (`run_eval`)."""


def run_eval(ports: EvalPorts, state: State) -> State:
    """All steps in this process; returns the final state."""
    while state["next"] != DONE:
        state = STEPS[state["next"]](ports, state)
    return state


def left_for_later(final: State) -> list[str]:
    """The runs of a finished eval that the judge could not be reached for: ask again later."""
    return [task_id for task_id, outcome in final.get("outcomes", {}).items()
            if outcome == LEFT_FOR_LATER]
