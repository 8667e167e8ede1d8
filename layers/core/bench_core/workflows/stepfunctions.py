"""The workflows port on AWS: each eval and each cluster request is a Step Functions execution.

Evals run on an Express state machine, one execution for the runs a batch finished (Express
bills per request and duration, Standard per state transition, and eval volume follows ingest
volume); clustering
runs on a Standard one (hourly or on demand, long-running, exactly once), and so does grading a
benchmark run (a few per day, minutes long, a chunk per step). See template.yaml.

Before its execution starts, the batch's runs are marked pending in the store (one mark for
them all), so a crash or a failed start in between loses nothing: the hourly sweep starts
whatever is still pending later.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from ..clock import SYSTEM_CLOCK, Clock
from ..domain.models import AgentRef, iso
from ..log import logger
from ..ports.store import EvalStore
from ..ports.workflows import benchmark_start, eval_start

RUNS_PER_EVAL = 32
"""Runs one execution judges: all at once (`evals.workflow.JUDGES_AT_ONCE`), so the Judge step
takes one judgement's time however many there are, within its timeout."""


def execution_name(kind: str, key: str, unique: str) -> str:
    """A valid execution name (≤ 80 chars of [A-Za-z0-9-_]) that says what it runs."""
    return f"{kind}-{hashlib.sha256(key.encode()).hexdigest()[:24]}-{unique}"[:80]


class StepFunctionsStarter:
    def __init__(self, eval_arn: str | None, cluster_arn: str | None, evals: EvalStore,
                 client: Any = None, benchmark_arn: str | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.eval_arn = eval_arn
        self.clock = clock
        self.cluster_arn = cluster_arn
        self.benchmark_arn = benchmark_arn
        self.evals = evals
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("stepfunctions")
        return self._client

    def start_evals(self, ref: AgentRef, task_ids: list[str], *,
                    private: bool | None = None) -> None:
        if not task_ids or not self.eval_arn:
            return
        now = iso(self.clock.now())
        for i in range(0, len(task_ids), RUNS_PER_EVAL):
            runs = task_ids[i:i + RUNS_PER_EVAL]
            try:
                self.evals.mark_evals_pending(ref, runs, now)
            except Exception:
                logger.exception("could not mark evals pending", extra={"agent": ref.path})
            key = f"{ref.path}/{','.join(sorted(runs))}"
            self._start(self.eval_arn, execution_name("eval", key, str(time.time_ns())),
                        eval_start(ref.path, runs, private=private, queued_at=now))

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
