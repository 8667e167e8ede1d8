"""Failure clusters: grouping, k from the data, representatives, descriptions, storage, privacy,
and the rule that nothing an HTTP function or the eval workflow imports pulls in numpy."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from bench_core.clock import FixedClock
from bench_core.clustering import workflow as cluster
from bench_core.clustering.describe import TERMS_LABEL
from bench_core.clustering.kmeans import group
from bench_core.domain.models import AgentMeta, AgentRef, EvalResult, iso
from bench_core.domain.privacy import HIDDEN, Viewer, insights_view
from bench_core.evals import queue
from bench_core.ports.llm import Completion, LLMUnavailable
from bench_core.runtime.adapters import Services
from bench_core.settings import Settings

from tests.factories import BASE, an_hour_ago, clean, task_events

REF = AgentRef("alice", "agent-1")
SERVICES = ["search", "fetch", "weather", "geocode", "vector-db", "crm", "billing"]


def timeout(r: random.Random) -> str:
    return (f"TimeoutError: request to the {r.choice(SERVICES)} API timed out after "
            f"{r.choice([10, 30, 60])}s (request id {r.getrandbits(48):x})")


def rate_limit(r: random.Random) -> str:
    return (f"HTTP 429 Too Many Requests from {r.choice(['openai', 'anthropic', 'cohere'])}: "
            f"rate limit exceeded, retry after {r.randint(1, 90)} seconds")


def parse_error(r: random.Random) -> str:
    return (f"JSONDecodeError: Expecting value: line {r.randint(1, 40)} column {r.randint(1, 80)} "
            f"(char {r.randint(0, 4000)}) while parsing the {r.choice(SERVICES)} reply")


KINDS = {"timeout": timeout, "rate": rate_limit, "parse": parse_error}


def synthetic_failures(n_per_kind: int, seed: int = 7) -> list[tuple[str, str]]:
    """(kind, error text), the kinds interleaved."""
    r = random.Random(seed)
    rows = [(kind, make(r)) for kind, make in KINDS.items() for _ in range(n_per_kind)]
    r.shuffle(rows)
    return rows


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    s = Services.from_settings(Settings(data_dir=tmp_path, store="memory"))
    yield s
    s.close()


def ingest_failures(services: Services, rows: list[tuple[str, str]]) -> dict[str, str]:
    """Store each row as a failed run, ended within the eval sweep's window; returns task id
    → kind."""
    kinds, events = {}, []
    for i, (kind, text) in enumerate(rows):
        kinds[f"t{i}"] = kind
        events += task_events(f"t{i}", status="failed", output=text)
    services.store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(an_hour_ago(events)))
    return kinds


def test_three_kinds_of_failure_make_three_clusters_with_different_labels(services: Services) -> None:
    kinds = ingest_failures(services, synthetic_failures(20))
    result = cluster.cluster_agent(services, {"agent": REF.path})
    assert result == {"agent": REF.path, "clusters": 3, "considered": 60}
    insights = services.store.evals.get_insights(REF)
    clusters = insights["clusters"]
    assert len({c["label"] for c in clusters}) == 3
    assert all(c["describer"] == TERMS_LABEL for c in clusters)
    assert sorted(c["count"] for c in clusters) == [20, 20, 20]
    assert sum(c["share"] for c in clusters) == pytest.approx(1.0, abs=1e-3)
    for c in clusters:  # each cluster is one kind, and its examples show it
        assert len({kinds[t] for t in c["example_task_ids"]}) == 1
    labels = " | ".join(c["label"] for c in clusters).lower()
    assert "timed" in labels or "timeouterror" in labels
    assert "429" in labels or "rate" in labels
    assert "jsondecodeerror" in labels or "expecting" in labels
    assert insights["embedder"] == "tfidf" and insights["silhouette"] > 0.1
    assert (insights["considered"], insights["failed"], insights["low_scored"]) == (60, 60, 0)


def test_a_model_describes_each_cluster_in_one_line(services: Services) -> None:
    class Describer:
        label = "bedrock:test-model"

        def __init__(self) -> None:
            self.prompts: list[str] = []

        def complete(self, system, messages, *, max_tokens):  # noqa: ANN001, ANN201 - the LLM port
            self.prompts.append(messages[0]["content"])
            return Completion(f'"Failure mode {len(self.prompts)}"\nextra line ignored', 50, 8)

    describer = Describer()
    ingest_failures(services, synthetic_failures(10))
    cluster.cluster_agent(services.provide(llm=describer), {"agent": REF.path})
    clusters = services.store.evals.get_insights(REF)["clusters"]
    assert sorted(c["label"] for c in clusters) == ["Failure mode 1", "Failure mode 2", "Failure mode 3"]
    assert all(c["describer"] == "bedrock:test-model" and c["prompt_version"].startswith("describe-v1#")
               for c in clusters)
    assert all("Distinguishing terms" in p and "1. " in p for p in describer.prompts)


def test_an_unavailable_describer_falls_back_to_terms_labelled_as_such(services: Services) -> None:
    class Down:
        label = "bedrock:down"

        def complete(self, system, messages, *, max_tokens):  # noqa: ANN001, ANN201 - the LLM port
            raise LLMUnavailable("throttled")

    ingest_failures(services, synthetic_failures(4))
    cluster.cluster_agent(services.provide(llm=Down()), {"agent": REF.path})
    assert {c["describer"] for c in services.store.evals.get_insights(REF)["clusters"]} == {TERMS_LABEL}


def test_too_little_data_is_one_cluster(services: Services) -> None:
    ingest_failures(services, synthetic_failures(1))
    cluster.cluster_agent(services, {"agent": REF.path})
    (only,) = services.store.evals.get_insights(REF)["clusters"]
    assert only["count"] == 3 and only["share"] == 1.0


def test_an_agent_without_failures_gets_empty_insights(services: Services) -> None:
    services.store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(task_events("ok")))
    assert cluster.cluster_agent(services, {"agent": REF.path})["clusters"] == 0
    assert services.store.evals.get_insights(REF)["clusters"] == []


def test_low_scored_runs_join_failures_with_the_judges_reasoning(services: Services) -> None:
    services.store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(
        task_events("low", output="an answer about cats")))
    services.store.evals.record_eval(REF, "low", EvalResult(
        status="scored", judge="heuristic-v1", at="2026-12-03T00:00:00.000Z", score=0.1,
        reasoning="The answer is about cats, the question about dogs."))
    (task,) = services.store.evals.cluster_candidates(REF, 10)
    assert cluster.failure_text(task) == ("an answer about cats\n"
                                          "The answer is about cats, the question about dogs.")


def test_structureless_data_stays_one_cluster_and_representatives_are_central() -> None:
    rng = np.random.default_rng(0)
    noise = rng.normal(size=(60, 16))
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    assert group(noise).k == 1
    blobs = np.vstack([rng.normal(loc, 0.05, size=(15, 2)) for loc in ([5, 0], [0, 5], [-5, -5])])
    grouping = group(blobs)
    assert grouping.k == 3
    for members in grouping.nearest:
        centre = blobs[members].mean(axis=0)
        distances = np.linalg.norm(blobs[members] - centre, axis=1)
        assert distances[0] == distances.min()


def test_labels_of_an_agent_hiding_outputs_are_private(services: Services) -> None:
    ingest_failures(services, synthetic_failures(3))
    services.store.agents.update_agent(REF, {"hide_outputs": True})
    cluster.cluster_agent(services, {"agent": REF.path})
    agent = services.store.agents.update_agent(REF, {"hide_outputs": False})
    insights = services.store.evals.get_insights(REF)
    assert insights["private"] is True
    public = insights_view(insights, agent, Viewer())
    assert {c["label"] for c in public["clusters"]} == {HIDDEN}
    assert all(c["terms"] == [] and c["example_task_ids"] for c in public["clusters"])
    assert HIDDEN not in {c["label"] for c in insights_view(insights, agent, Viewer("alice"))["clusters"]}


def test_the_scheduled_steps_sweep_pending_evals_and_find_due_agents(services: Services) -> None:
    started: list[tuple[str, list[str]]] = []

    class Recorder:
        def start_evals(self, ref: AgentRef, task_ids: list[str], *,
                        private: bool | None = None, marked: bool = False) -> None:
            started.append((ref.path, task_ids))

    ingest_failures(services, synthetic_failures(1))
    services.provide(workflows=Recorder())
    state = cluster.sweep_evals(services, {}, min_age=cluster.timedelta(0))
    assert state["swept"] == 3 and started == [(REF.path, ["t0", "t1", "t2"])]
    assert cluster.due_agents(services, {})["agents"] == []
    services.store.evals.record_eval(REF, "t0", EvalResult(status="skipped", judge="h", at="2000-01-01T00:00:00.000Z"))
    assert cluster.due_agents(services, {})["agents"] == [REF.path]
    cluster.cluster_agent(services, {"agent": REF.path})
    assert cluster.due_agents(services, {})["agents"] == []


@dataclass
class Sweeping:
    """Services on a fixed clock an hour after the fixtures' runs, whose workflows only record
    the evals the sweep starts."""

    services: Services
    clock: FixedClock
    started: list[list[str]] = field(default_factory=list)

    def start_evals(self, ref: AgentRef, task_ids: list[str], *,
                    private: bool | None = None, marked: bool = False) -> None:
        self.started.append(task_ids)


@pytest.fixture
def sweeping(tmp_path: Path) -> Iterator[Sweeping]:
    clock = FixedClock(BASE + timedelta(hours=1))
    sweep = Sweeping(Services.from_settings(Settings(data_dir=tmp_path), clock), clock)
    sweep.services.provide(workflows=sweep)
    try:
        yield sweep
    finally:
        sweep.services.close()


def test_the_sweep_takes_the_runs_of_its_window_by_the_services_clock(sweeping: Sweeping) -> None:
    """The fixtures' runs (ended 2026-12-02) are swept while the clock is within two days of
    them, and no longer after, whatever day the test runs on."""
    services, clock, started = sweeping.services, sweeping.clock, sweeping.started
    services.store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(
        task_events("t1", status="failed", output="TimeoutError")))
    assert cluster.sweep_evals(services, {}) == {"swept": 1, "gave_up": 0}
    assert started == [["t1"]]
    clock.advance(cluster.SWEEP_WINDOW)
    assert cluster.sweep_evals(services, {}) == {"swept": 0, "gave_up": 1}
    assert started == [["t1"]], "past its window a run is no longer sent to the judge"


def test_a_run_the_judge_never_reached_is_marked_unscored_once_its_window_has_passed(
        sweeping: Sweeping) -> None:
    """Runs past the sweep's window stop being pending for ever: each is recorded unscored,
    saying why, once; younger runs are still sent to the judge and left alone."""
    services, clock, started = sweeping.services, sweeping.clock, sweeping.started
    ref = AgentRef("alice", "agent-1")
    services.store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(
        task_events("old", status="failed", output="TimeoutError")))
    clock.advance(cluster.SWEEP_WINDOW + timedelta(hours=5))
    young = [{**e, "ts": iso(clock.now() - timedelta(hours=1))}
             for e in task_events("young", status="failed", output="TimeoutError")]
    services.store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(young))
    assert cluster.sweep_evals(services, {}) == {"swept": 1, "gave_up": 1}
    assert started == [["young"]]
    old = services.store.ingest.get_task(ref, "old")
    assert old is not None and old.eval is not None
    assert (old.eval.status, old.eval.reason, old.eval.score) == ("unscored", queue.GAVE_UP, None)
    young_task = services.store.ingest.get_task(ref, "young")
    assert young_task is not None and young_task.eval is None
    assert cluster.sweep_evals(services, {})["gave_up"] == 0, "marked once"


def test_http_routers_and_the_eval_workflow_do_not_import_numpy_or_sklearn() -> None:
    """Cold starts: only the cluster path may load the heavy libraries, and only when used."""
    script = (
        "import importlib, json, pkgutil, sys\n"
        "import bench_core.http as http\n"
        "for m in pkgutil.iter_modules(http.__path__): importlib.import_module(f'bench_core.http.{m.name}')\n"
        "import bench_core.evals.workflow, bench_core.clustering.workflow, bench_core.workflows.local\n"
        "import bench_core.local, bench_core.runtime.adapters\n"
        "print(json.dumps(sorted(m for m in ('numpy', 'sklearn', 'scipy') if m in sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
