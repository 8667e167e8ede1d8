"""The Workflows port: starting evals, cluster runs and benchmark grading, in this process or
as Step Functions.

The work itself is plain step functions (`evals/workflow.py`, `clustering/workflow.py`,
`benchmarks/workflow.py`), each taking and returning a JSON-able state, so the local runner
(`workflows/local.py`, handed them as `Jobs` by the composition root) and the Lambdas behind the
state machines (`functions/eval`, `functions/cluster`, `functions/benchmark`) run the very same
code, from the states `eval_start` and `benchmark_start` make. Starting work never waits for
it: ingest hands finished runs to `start_evals` and returns; a submitted benchmark run is
answered 202.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..domain.models import AgentRef

State = dict[str, Any]
"""What a step takes and returns: JSON-able, as Step Functions passes it between states."""


class Workflows(Protocol):
    def start_evals(self, ref: AgentRef, task_ids: list[str], *,
                    private: bool | None = None, marked: bool = False) -> None:
        """Evaluate these finished tasks eventually, together (`eval_start`); `private` says
        whether the agent hides its content, when the caller knows (else the workflow reads
        the agent); `marked`, that they carry a pending mark (`mark_evals_pending`, the
        sweep's), which their eval clears. Never raises for a failed start (the sweep finds
        what could not be started)."""
        ...

    def start_clusters(self, refs: list[AgentRef]) -> None:
        """Recompute these agents' failure clusters."""
        ...

    def start_benchmark(self, run_id: str) -> None:
        """Grade this stored `pending` benchmark run; raises if grading could not be started
        (no sweep finds a run left pending: the submitter is told to send it again)."""
        ...


class Jobs(Protocol):
    """The work itself, as a runner in this process does it (`runtime/jobs.py` binds the steps
    to the services): each workflow run to its end, and the hourly round's."""

    def evaluate(self, state: State) -> list[str]:
        """Every eval step from `state` (`eval_start`); the runs the judge could not be reached
        for (the others are recorded: the caller retries these); raises `LLMUnavailable` when
        it could be reached for none (nothing recorded)."""
        ...

    def cluster(self, agent: str) -> None:
        """Recompute the failure clusters of the agent "login/slug"."""
        ...

    def grade(self, run_id: str) -> None:
        """Grade the stored run to the end (a failing step fails the run, saying why)."""
        ...

    def purge_expired(self, now: str) -> int:
        """Delete what has expired by `now` (`RetentionStore.purge_expired`); the rows deleted."""
        ...

    def judge_sessions(self) -> None:
        """Judge the sessions that have ended since their last verdict (a bounded round)."""
        ...

    def sweep(self, workflows: Workflows, *, startup: bool) -> list[AgentRef]:
        """Start, through `workflows`, the evals of finished runs still without a result (at
        `startup` even the youngest: nothing can be in flight), and return the agents whose
        failure clusters are due."""
        ...

    def watch(self, agent: str) -> None:
        """Look at the regression monitors of the agent "login/slug" (at most once an hour)
        and deliver the alerts that opened or resolved."""
        ...

    def watch_active(self) -> None:
        """The hourly round's looks, after its clusters: `watch` each agent with runs lately,
        listed or not, so one whose runs the judge's budget skips (no evals, no look after
        them) is watched too. Takes as long as the looks and their deliveries take."""
        ...


def eval_start(agent: str, task_ids: list[str], *, force: bool = False,
               private: bool | None = None, queued_at: str | None = None,
               marked: bool = False) -> State:
    """The input of one eval workflow: the agent ("login/slug") and the finished tasks it
    judges together; `force` re-judges judged ones; `private` whether the agent hides its
    content (read from the agent when absent); `queued_at` when they were first queued;
    `marked`, that they carry a pending mark to clear."""
    state: State = {"agent": agent, "task_ids": list(task_ids), "force": force, "next": "judge"}
    if marked:
        state["marked"] = True
    if private is not None:
        state["private"] = private
    if queued_at is not None:
        state["queued_at"] = queued_at
    return state


def benchmark_start(run_id: str) -> State:
    """The input of grading one stored `pending` benchmark run."""
    return {"run_id": run_id, "next": "grade"}


def parse_agent(path: Any) -> AgentRef:
    """The agent a workflow state names as "login/slug"; ValueError for anything else."""
    login, sep, slug = str(path).partition("/")
    if not (login and sep and slug) or "/" in slug:
        raise ValueError(f"not an agent path: {path!r}")
    return AgentRef(login, slug)
