"""The hourly state machine's steps (statemachines/cluster.asl.json), in the order its Task
states run them: the cluster workflow's, with the hourly looks at the active agents' regression
monitors after the sweep (`alerts.watch.hourly_looks`), then the session judging, which ClusterFunction runs too: the
schedule already starts it every hour, and a look is claimed per agent and hour, so the
machine's retries and reruns look at no agent twice."""

from __future__ import annotations

from ..alerts.watch import hourly_looks
from ..clustering import workflow as cluster
from .workflow_steps import Step

STEPS: dict[str, Step] = {
    "sweep_evals": cluster.sweep_evals, "watch_active": hourly_looks,
    "judge_sessions": cluster.STEPS["judge_sessions"], "due_agents": cluster.due_agents,
    "cluster_agent": cluster.cluster_agent}
