"""The Workflows port: starting evals, cluster runs and benchmark grading, in this process or
as Step Functions.

The work itself is plain step functions (`evals/workflow.py`, `clustering/workflow.py`,
`benchmarks/workflow.py`), each taking and returning a JSON-able state, so the local runner
(`workflows/local.py`) and the Lambdas behind the state machines (`functions/eval`, `functions/cluster`,
`functions/benchmark`) run the very same code. Starting work never waits for it: ingest hands
finished runs to `start_evals` and returns; a submitted benchmark run is answered 202.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..domain.models import AgentRef

State = dict[str, Any]
"""What a step takes and returns: JSON-able, as Step Functions passes it between states."""


class Workflows(Protocol):
    def start_evals(self, ref: AgentRef, task_ids: list[str]) -> None:
        """Evaluate these finished tasks eventually; never raises for a failed start (the
        sweep finds what could not be started)."""
        ...

    def start_clusters(self, refs: list[AgentRef]) -> None:
        """Recompute these agents' failure clusters."""
        ...

    def start_benchmark(self, run_id: str) -> None:
        """Grade this stored `pending` benchmark run; raises if grading could not be started
        (no sweep finds a run left pending: the submitter is told to send it again)."""
        ...


def parse_agent(path: Any) -> AgentRef:
    """The agent a workflow state names as "login/slug"; ValueError for anything else."""
    login, sep, slug = str(path).partition("/")
    if not (login and sep and slug) or "/" in slug:
        raise ValueError(f"not an agent path: {path!r}")
    return AgentRef(login, slug)
