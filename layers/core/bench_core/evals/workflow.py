"""EvalWorkflow: one run per finished task, as three steps over a JSON-able state.

    load ──skip──────────────┐
      └──judge──▶ judge ──▶ record ──▶ done

- `load` decides: nothing to do (unknown, unfinished or already judged task), skip (the judge
  budget, recorded as `skipped`), unscored without asking (`NO_CONTENT`: a successful run whose
  input and output were not captured says nothing about its quality), or judge. A run left
  unscored for `NO_CONTENT` is judged when its content arrives later (OTLP log events).
- `judge` asks the judge. A judge that cannot be reached raises `LLMUnavailable`: no result is
  written, the caller retries with backoff (the worker pool, or the state machine's Retry), and
  past that the task stays pending for the sweep.
- `record` writes the result to the task and the agent's counters in one atomic store call;
  reasoning written while the agent hides inputs or outputs is stored as private.

Each step returns the state with `next` naming the following step, which is what the state
machine's Choice states read (`statemachines/eval.asl.json`, checked against `STEPS`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..domain.models import EvalResult, iso
from ..domain.task_text import is_empty
from ..ports.services import WithAgents, WithClock, WithEvals, WithIngest, WithJudge, WithSettings
from ..ports.workflows import State, parse_agent
from .budget import skip_reason

DONE = "done"
NO_CONTENT = "no content captured"


class EvalConcerns(WithAgents, WithIngest, WithEvals, Protocol):
    """The agent and its task judged, and where the result and the day's spend go."""


class EvalPorts(WithJudge, WithSettings, WithClock, Protocol):
    """What the eval steps use: the store, the judge (built on first use, so a step that does
    not judge never opens the model) and the settings (the judge's budget)."""

    @property
    def store(self) -> EvalConcerns: ...


def load(ports: EvalPorts, state: State) -> State:
    ref = parse_agent(state["agent"])
    agent = ports.store.agents.get_agent(ref)
    task = ports.store.ingest.get_task(ref, state["task_id"]) if agent else None
    if agent is None or task is None or not task.finished:
        return {**state, "next": DONE, "outcome": "no finished task to judge"}
    captured = task.status == "failed" or not (is_empty(task.input) and is_empty(task.output))
    waited_for_content = task.eval is not None and task.eval.reason == NO_CONTENT and captured
    if task.eval is not None and not state.get("force") and not waited_for_content:
        return {**state, "next": DONE, "outcome": f"already {task.eval.status}"}
    now = ports.clock.now()
    if not captured:
        unscored = EvalResult(status="unscored", judge=ports.judge.label, at=iso(now),
                              reason=NO_CONTENT)
        return {**state, "next": "record", "result": unscored.to_dict()}
    reason = skip_reason(agent, task.task_id, ports.store.evals.judge_spend(ref, iso(now)[:10]),
                         ports.settings.judge)
    if reason is None:
        return {**state, "next": "judge"}
    skipped = EvalResult(status="skipped", judge=ports.judge.label, at=iso(now), reason=reason)
    return {**state, "next": "record", "result": skipped.to_dict()}


def judge(ports: EvalPorts, state: State) -> State:
    task = ports.store.ingest.get_task(parse_agent(state["agent"]), state["task_id"])
    if task is None:
        return {**state, "next": DONE, "outcome": "task vanished"}
    return {**state, "next": "record", "result": ports.judge.judge(task).to_dict()}


def record(ports: EvalPorts, state: State) -> State:
    ref = parse_agent(state["agent"])
    agent = ports.store.agents.get_agent(ref)
    if agent is None:
        return {**state, "next": DONE, "outcome": "agent vanished"}
    result = EvalResult.from_dict(state["result"])
    result.private = agent.hide_inputs or agent.hide_outputs
    stored = ports.store.evals.record_eval(ref, state["task_id"], result)
    return {**state, "next": DONE, "outcome": result.status if stored else "kept the earlier result"}


STEPS: dict[str, Callable[[EvalPorts, State], State]] = {"load": load, "judge": judge, "record": record}
"""The steps in order; the Task states of the eval state machine call exactly these."""


def run_eval(ports: EvalPorts, state: State) -> State:
    """All steps in this process (the local worker pool); returns the final state."""
    while state["next"] != DONE:
        state = STEPS[state["next"]](ports, state)
    return state
