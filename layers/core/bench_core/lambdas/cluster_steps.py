"""The hourly state machine's steps (statemachines/cluster.asl.json), in the order its Task
states run them: the cluster workflow's (the sweep, the session judging, the agents due and
their clusters), then the hourly looks at the active agents' regression monitors
(`alerts.watch.hourly_looks`), after the clustering so that the failure-cluster monitor sees the
clusters of this hour. ClusterFunction runs them all: the schedule already starts it every hour,
and a look is claimed per agent and hour, so the machine's retries and reruns look at no agent
twice."""

from __future__ import annotations

from ..alerts.watch import hourly_looks
from ..clustering import workflow as cluster
from .workflow_steps import Step

STEPS: dict[str, Step] = {**cluster.STEPS, "watch_active": hourly_looks}
