"""The workflows port on AWS: evals go to the eval queue (`eval_queue.py`); each cluster
request and each benchmark run is a Step Functions execution.

Clustering runs on a Standard state machine (hourly or on demand, long-running, exactly once),
and so does grading a benchmark run (a few per day, minutes long, a chunk per step). See
template.yaml.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from ..clock import SYSTEM_CLOCK, Clock
from ..domain.models import AgentRef
from ..log import logger
from ..ports.workflows import benchmark_start
from .eval_queue import EvalQueue


def execution_name(kind: str, key: str, unique: str) -> str:
    """A valid execution name (≤ 80 chars of [A-Za-z0-9-_]) that says what it runs."""
    return f"{kind}-{hashlib.sha256(key.encode()).hexdigest()[:24]}-{unique}"[:80]


class StepFunctionsStarter:
    """Clusters and benchmark runs as executions; evals on `evals`, the queue (none: no evals
    start here)."""

    def __init__(self, evals: EvalQueue | None, cluster_arn: str | None,
                 client: Any = None, benchmark_arn: str | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.eval_queue = evals
        self.clock = clock
        self.cluster_arn = cluster_arn
        self.benchmark_arn = benchmark_arn
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("stepfunctions")
        return self._client

    def start_evals(self, ref: AgentRef, task_ids: list[str], *,
                    private: bool | None = None, marked: bool = False) -> None:
        if task_ids and self.eval_queue is not None:
            self.eval_queue.start_evals(ref, task_ids, private=private, marked=marked)

    def start_clusters(self, refs: list[AgentRef]) -> None:
        """One execution for these agents; the same request within a minute is the same
        execution (Standard workflows dedupe a name with the same input)."""
        if not refs or not self.cluster_arn:
            return
        paths = sorted(ref.path for ref in refs)
        name = execution_name("cluster", ",".join(paths), self.clock.now().strftime("%Y%m%d%H%M"))
        self._start(self.cluster_arn, name, {"agents": paths})

    def start_benchmark(self, run_id: str) -> None:
        """One execution per run; raises when it cannot start (the run is then marked failed
        and its submitter told to send it again, which starts a new execution)."""
        if not self.benchmark_arn:
            raise RuntimeError("BENCH_BENCHMARK_STATE_MACHINE_ARN is not set")
        self.client.start_execution(
            stateMachineArn=self.benchmark_arn, input=json.dumps(benchmark_start(run_id)),
            name=execution_name("benchmark", run_id, str(time.time_ns())))

    def _start(self, arn: str, name: str, payload: dict[str, Any]) -> None:
        try:
            self.client.start_execution(stateMachineArn=arn, name=name, input=json.dumps(payload))
        except Exception as exc:
            if getattr(exc, "response", {}).get("Error", {}).get("Code") == "ExecutionAlreadyExists":
                return  # this very request ran a moment ago
            logger.exception("could not start execution; the sweep will retry",
                             extra={"state_machine": arn, "execution": name})
