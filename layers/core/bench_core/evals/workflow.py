"""EvalWorkflow: one run per finished task, as three steps over a JSON-able state.

    load ──skip──────────────┐
      └──judge──▶ judge ──▶ record ──▶ done

- `load` decides: nothing to do (unknown, unfinished or already judged task), skip (the judge
  budget, recorded as `skipped`), or judge.
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

from ..domain.models import EvalResult, iso, utcnow
from ..runtime.adapters import Services
from ..workflows import State, parse_agent
from .budget import skip_reason

DONE = "done"


def start_state(agent: str, task_id: str, *, force: bool = False) -> State:
    """The input of one eval run ("login/slug", task id); `force` re-judges a judged task."""
    return {"agent": agent, "task_id": task_id, "force": force, "next": "load"}


def load(services: Services, state: State) -> State:
    ref = parse_agent(state["agent"])
    agent = services.store.get_agent(ref)
    task = services.store.get_task(ref, state["task_id"]) if agent else None
    if agent is None or task is None or not task.finished:
        return {**state, "next": DONE, "outcome": "no finished task to judge"}
    if task.eval is not None and not state.get("force"):
        return {**state, "next": DONE, "outcome": f"already {task.eval.status}"}
    now = utcnow()
    reason = skip_reason(agent, task.task_id, services.store.judge_spend(ref, iso(now)[:10]),
                         services.settings.judge)
    if reason is None:
        return {**state, "next": "judge"}
    skipped = EvalResult(status="skipped", judge=services.judge.label, at=iso(now), reason=reason)
    return {**state, "next": "record", "result": skipped.to_dict()}


def judge(services: Services, state: State) -> State:
    task = services.store.get_task(parse_agent(state["agent"]), state["task_id"])
    if task is None:
        return {**state, "next": DONE, "outcome": "task vanished"}
    return {**state, "next": "record", "result": services.judge.judge(task).to_dict()}


def record(services: Services, state: State) -> State:
    ref = parse_agent(state["agent"])
    agent = services.store.get_agent(ref)
    if agent is None:
        return {**state, "next": DONE, "outcome": "agent vanished"}
    result = EvalResult.from_dict(state["result"])
    result.private = agent.hide_inputs or agent.hide_outputs
    stored = services.store.record_eval(ref, state["task_id"], result)
    return {**state, "next": DONE, "outcome": result.status if stored else "kept the earlier result"}


STEPS: dict[str, Callable[[Services, State], State]] = {"load": load, "judge": judge, "record": record}
"""The steps in order; the Task states of the eval state machine call exactly these."""


def run_eval(services: Services, state: State) -> State:
    """All steps in this process (the local worker pool); returns the final state."""
    while state["next"] != DONE:
        state = STEPS[state["next"]](services, state)
    return state
