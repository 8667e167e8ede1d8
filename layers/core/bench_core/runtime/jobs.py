"""The workflows' steps run to their end in this process, over the services: the `Jobs` the local
runner (`workflows/local.py`) is handed, so the runner, an adapter, imports no use case."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from ..alerts.monitor import MonitorConcerns
from ..alerts.watch import watch_active, watch_agent
from ..benchmarks import workflow as benchmark
from ..clock import Clock
from ..clustering import workflow as cluster
from ..domain.models import AgentRef
from ..evals import session_judge
from ..evals import workflow as evals
from ..ports.services import WithBenchmarks, WithLeaderboard, WithRetention
from ..ports.workflows import State, Workflows, parse_agent
from ..settings import Settings


class JobConcerns(evals.EvalConcerns, cluster.ClusterConcerns, WithBenchmarks, WithRetention,
                  MonitorConcerns, WithLeaderboard, Protocol):
    """The eval, cluster and grading steps' concerns, what expires, the monitors', and the
    leaderboard (the agents the hourly round watches)."""


class JobPorts(evals.EvalPorts, cluster.ClusterPorts, benchmark.GradePorts, Protocol):
    """What the jobs use: the eval, cluster and grading steps' ports (the store also purges
    and keeps alerts), the settings (where alerts go out) and the clock."""

    @property
    def settings(self) -> Settings: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def store(self) -> JobConcerns: ...


@dataclass(frozen=True)
class LocalJobs:
    ports: JobPorts

    def evaluate(self, state: State) -> list[str]:
        return evals.left_for_later(evals.run_eval(self.ports, state))

    def cluster(self, agent: str) -> None:
        cluster.cluster_agent(self.ports, {"agent": agent})

    def grade(self, run_id: str) -> None:
        benchmark.run_grading(self.ports, run_id)

    def purge_expired(self, now: str) -> int:
        return self.ports.store.retention.purge_expired(now)

    def watch(self, agent: str) -> None:
        """In a thread of its own: a webhook's retries (seconds) never hold a judge's worker."""
        threading.Thread(target=watch_agent, args=(self.ports, parse_agent(agent)),
                         name="bench-alerts", daemon=True).start()

    def watch_active(self) -> None:
        """The agents one after another, in the caller's thread (the runner's looks have one
        of their own)."""
        watch_active(self.ports)

    def judge_sessions(self) -> None:
        session_judge.judge_sessions(self.ports, {})

    def sweep(self, workflows: Workflows, *, startup: bool) -> list[AgentRef]:
        state = cluster.sweep_evals(self.ports, {}, timedelta(0) if startup else cluster.SWEEP_MIN_AGE,
                                    workflows=workflows)
        return [parse_agent(path) for path in cluster.due_agents(self.ports, state)["agents"]]
