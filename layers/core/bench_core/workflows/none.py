"""The Workflows port's null adapter: it starts nothing (`ports/workflows.py`)."""

from __future__ import annotations

from ..domain.models import AgentRef


class NoWorkflows:
    """Shared storage without state machines (a DynamoDB store used from a laptop): this
    process must not judge in the background, and the sweep of a real deployment will."""

    def start_evals(self, ref: AgentRef, task_ids: list[str], *,
                    private: bool | None = None, marked: bool = False) -> None:
        return None

    def start_clusters(self, refs: list[AgentRef]) -> None:
        return None

    def start_benchmark(self, run_id: str) -> None:
        raise RuntimeError("no workflows here to grade benchmark runs: submit them to the "
                           "deployment's API")
