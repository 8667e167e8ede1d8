"""ClusterWorkflow: failure clusters per agent, hourly for agents with new failures and on demand.

Steps over JSON-able states (the cluster state machine's Task states call exactly `STEPS`):

- `sweep_evals`: restart evals of finished runs that never got a result (the judge was down, a
  start was lost); idempotent, as evals are.
- `judge_sessions`: judge the sessions that have ended since their last verdict
  (`evals/session_judge.py`), at most `IDLE_SESSIONS` a round.
- `due_agents`: the agents with failed or low-scored runs since their last clusters.
- `cluster_agent` (a Map over agents on AWS): the agent's failed and low-scored runs, newest
  first and bounded, embedded, grouped by k-means, described in one line each, stored; each
  cluster given the id of the one it continues (`domain.cluster_series.carry_ids`) and the
  runs first assigned counted in their cluster's hour and day (`store.clusters`), before the
  insights that name the ids are kept.

numpy and scikit-learn are imported inside `cluster_agent` only (via `bench_core.clustering.kmeans`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, Protocol

from ..domain.cluster_series import carry_ids, member_digest, new_counts
from ..domain.models import AgentRef, TaskState, iso
from ..domain.task_text import as_text
from ..evals.queue import GIVE_UP_AFTER, give_up
from ..evals.session_judge import SessionJudgeConcerns, judge_sessions
from ..ports.services import (
    WithClock,
    WithClusters,
    WithEmbedder,
    WithJudge,
    WithLLM,
    WithSettings,
    WithWorkflows,
)
from ..ports.workflows import State, Workflows, parse_agent
from .describe import describe, top_terms, words

MAX_TASKS = 1000
"""Failures considered per agent (the newest): enough to see its failure modes, bounded cost."""
TEXT_CHARS = 2000
EXAMPLES = 3
SWEEP_WINDOW = GIVE_UP_AFTER
"""The sweep gives up on a run when the eval queue does (`evals/queue.py`)."""
SWEEP_MIN_AGE = timedelta(minutes=10)
"""Runs younger than this are probably being judged right now; the next sweep gets them."""
SWEEP_LIMIT = 5000
DUE_LIMIT = 500


class ClusterConcerns(SessionJudgeConcerns, WithClusters, Protocol):
    """The agents clustered, their failed and low-scored runs, their insights and clusters
    over time; the sessions judged."""


class ClusterPorts(WithWorkflows, WithEmbedder, WithLLM, WithJudge, WithSettings, WithClock,
                   Protocol):
    """What the cluster steps use: the store, where evals start (the sweep), the embedder and
    the describer's model (both built on first use: only `cluster_agent` needs them), the
    judge (the sessions') and the settings (the describer's prompt)."""

    @property
    def store(self) -> ClusterConcerns: ...


def sweep_evals(ports: ClusterPorts, state: State, min_age: timedelta = SWEEP_MIN_AGE,
                workflows: Workflows | None = None) -> State:
    """Start evals (through `workflows`, by default the ports') of runs that ended within
    `SWEEP_WINDOW`, at least `min_age` ago, and still have no result; mark those that ended
    before it unscored (`GAVE_UP`), so a run the judge never reached says so on its page
    instead of staying pending for ever."""
    now = ports.clock.now()
    pending = ports.store.evals.pending_evals(iso(now - SWEEP_WINDOW), iso(now - min_age), SWEEP_LIMIT)
    for ref, task_ids in pending:
        (workflows or ports.workflows).start_evals(ref, task_ids, marked=True)
    expired = ports.store.evals.pending_evals("", iso(now - SWEEP_WINDOW), SWEEP_LIMIT)
    for ref, task_ids in expired:
        give_up(ports.store, ref, task_ids, now)
    return {**state, "swept": sum(len(ids) for _, ids in pending),
            "gave_up": sum(len(ids) for _, ids in expired)}


def due_agents(ports: ClusterPorts, state: State) -> State:
    return {**state, "agents": [ref.path for ref in ports.store.evals.clusters_due(DUE_LIMIT)]}


def cluster_agent(ports: ClusterPorts, state: State) -> State:
    ref = parse_agent(state["agent"])
    agent = ports.store.agents.get_agent(ref)
    if agent is None:
        return {"agent": ref.path, "clusters": 0, "outcome": "agent not found"}
    started = iso(ports.clock.now())
    tasks = ports.store.evals.cluster_candidates(ref, MAX_TASKS)
    insights, groups = build_insights(ports, tasks)
    insights.update(computed_at=started, private=agent.hide_inputs or agent.hide_outputs)
    count_clusters(ports.store, ref, tasks, insights, groups)
    ports.store.evals.save_insights(ref, insights)
    return {"agent": ref.path, "clusters": len(insights["clusters"]), "considered": len(tasks)}


def failure_text(task: TaskState) -> str:
    """What a failure says about itself: the error (a failed task's output) or, for a run
    judged poor, its output and the judge's reasoning."""
    text = as_text(task.output, TEXT_CHARS)
    if task.status != "failed" and task.eval is not None and task.eval.reasoning:
        text = f"{text}\n{task.eval.reasoning}"
    return text


def count_clusters(store: WithClusters, ref: AgentRef, tasks: list[TaskState],
                   insights: dict[str, Any], groups: list[list[int]]) -> None:
    """Give each of `insights`' clusters (members: `groups`, rows of `tasks`) the id of the
    cluster it continues, and count its runs not counted before where they ended. Kept only
    over the state it was matched against: a recomputation that lost a race with another
    (a retried step) counts nothing, and its insights keep the ids it matched."""
    previous = store.clusters.cluster_state(ref)
    digests = [member_digest(t.task_id) for t in tasks]
    state = carry_ids(previous, [[digests[i] for i in g] for g in groups])
    for cluster, cluster_id in zip(insights["clusters"], state.members, strict=True):
        cluster["id"] = cluster_id
    ended = {d: t.ended_at or t.started_at or "" for d, t in zip(digests, tasks, strict=True)}
    store.clusters.keep_clusters(ref, state, new_counts(previous, state, ended))


def build_insights(ports: ClusterPorts, tasks: list[TaskState]
                   ) -> tuple[dict[str, Any], list[list[int]]]:
    """Group `tasks` and describe each group: the stored shape of `failure_clusters`, and each
    cluster's members (rows of `tasks`, nearest its centre first)."""
    from .kmeans import group

    texts = [failure_text(t) for t in tasks]
    grouping = group(ports.embedder.embed(texts)) if tasks else None
    vocab = [words(t) for t in texts]
    clusters = []
    for members in grouping.nearest if grouping else []:
        inside = set(members)
        terms = top_terms([vocab[i] for i in members],
                          [v for i, v in enumerate(vocab) if i not in inside])
        examples = members[:EXAMPLES]
        text = describe(ports.llm, [texts[i] for i in examples], terms, len(members),
                        ports.settings.judge.describe_prompt)
        clusters.append({"label": text.label, "describer": text.describer,
                         "prompt_version": text.prompt_version, "terms": terms,
                         "count": len(members), "share": round(len(members) / len(tasks), 4),
                         "example_task_ids": [tasks[i].task_id for i in examples]})
    insights = {"clusters": clusters, "considered": len(tasks),
                "failed": sum(t.status == "failed" for t in tasks),
                "low_scored": sum(t.status != "failed" for t in tasks),
                "silhouette": (round(grouping.silhouette, 4) if grouping and grouping.silhouette
                               else None),
                "embedder": ports.embedder.label if tasks else None}
    return insights, grouping.nearest if grouping else []


STEPS: dict[str, Callable[[ClusterPorts, State], State]] = {
    "sweep_evals": sweep_evals, "judge_sessions": judge_sessions, "due_agents": due_agents,
    "cluster_agent": cluster_agent}
"""The steps in order; the cluster state machine's Task states call these, then the hourly
looks (`lambdas/cluster_steps.py`)."""

