"""The single-machine worker pool: work is found again after a stop, duplicates collapse, a
full queue drops to the sweep, an unavailable judge is retried and then left pending, an
agent's queued runs are recorded in one write, and the judge yields to a burst of batches and
catches up after it."""

from __future__ import annotations

import itertools
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from bench_core.clock import FixedClock
from bench_core.domain.models import Agent, AgentMeta, AgentRef, iso
from bench_core.ports.llm import Backoff, Completion, LLMUnavailable
from bench_core.ports.workflows import Workflows
from bench_core.runtime.adapters import Services
from bench_core.runtime.jobs import LocalJobs
from bench_core.settings import Settings
from bench_core.store.sqlite.connection import Database
from bench_core.workflows.local import (
    BUSY_FOR_S,
    EVALS_AT_ONCE,
    JUDGE_SHARE_UNDER_LOAD,
    MAX_REST_S,
    LocalRunner,
    rest_after,
)

from tests.factories import an_hour_ago, clean, task_events

REF = AgentRef("alice", "agent-1")
HANG_GUARD_S = 60


def wait_until(condition: Callable[[], bool]) -> None:
    """Poll until `condition` holds; the deadline only guards against a hang."""
    deadline = time.monotonic() + HANG_GUARD_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("gave up waiting (hang guard)")
        time.sleep(0.02)


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    s = Services.from_settings(Settings(data_dir=tmp_path, store="memory"))
    yield s
    s.close()


def ingest(services: Services, *task_ids: str) -> None:
    """Runs that ended within the sweep's window, as a running agent's do."""
    events = [e for t in task_ids for e in task_events(t)]
    services.store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(an_hour_ago(events)))


def judged(services: Services, *task_ids: str) -> bool:
    return all((t := services.store.ingest.get_task(REF, tid)) is not None and t.eval is not None
               for tid in task_ids)


def test_runs_finished_while_the_server_was_down_are_judged_at_start(services: Services) -> None:
    ingest(services, "t1", "t2")
    runner = LocalRunner(LocalJobs(services), workers=2)
    runner.start()
    try:
        wait_until(lambda: judged(services, "t1", "t2"))
    finally:
        runner.stop()
    assert services.store.agents.get_agent(REF).stats.eval_count == 2


def test_handed_off_runs_are_judged_and_stop_is_prompt(services: Services) -> None:
    runner = LocalRunner(LocalJobs(services), workers=1)
    runner.start()
    try:
        ingest(services, "t1")
        runner.start_evals(REF, ["t1"])
        wait_until(lambda: judged(services, "t1"))
    finally:
        runner.stop(timeout_s=5)
    assert runner._threads == []


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_while_ingest_is_busy_the_workers_keep_to_their_share_of_the_time(workers: int) -> None:
    job_s = 0.004
    rest = rest_after(job_s, workers, busy=True)
    share_of_all_workers = workers * job_s / (job_s + rest)
    assert share_of_all_workers == pytest.approx(JUDGE_SHARE_UNDER_LOAD)
    assert rest_after(job_s, workers, busy=False) == 0.0
    assert rest_after(600.0, workers, busy=True) == MAX_REST_S  # a judge retried for minutes


def test_runs_are_still_judged_while_batches_keep_arriving(services: Services) -> None:
    """The pause under load slows the judge; it never stops it."""
    runner = LocalRunner(LocalJobs(services), workers=1)
    runner.start()
    tasks = [f"t{i}" for i in range(20)]
    try:
        for task_id in tasks:
            ingest(services, task_id)
            runner.start_evals(REF, [task_id])
        wait_until(lambda: (runner.start_evals(REF, []), judged(services, *tasks))[1])
    finally:
        runner.stop(timeout_s=5)
    assert services.store.agents.get_agent(REF).stats.eval_count == len(tasks)


def test_duplicates_collapse_and_a_full_queue_leaves_work_to_the_sweep(services: Services) -> None:
    ingest(services, "t1", "t2")
    runner = LocalRunner(LocalJobs(services), workers=1, max_queue=1)
    runner.start_evals(REF, ["t1", "t1", "t2"])  # not started: t1 queued once, t2 dropped
    assert runner.waiting == 1
    runner.start()
    try:
        wait_until(lambda: judged(services, "t1"))
        # The startup sweep may have run while t1 still filled the queue (a busy machine): a
        # round with room, as the timer's next one, brings t2 back.
        runner.scheduled_round(startup=True)
        wait_until(lambda: judged(services, "t1", "t2"))  # t2 comes back through the sweep
    finally:
        runner.stop()


def test_what_a_full_queue_dropped_is_swept_as_soon_as_it_drains(
        services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not at the next hour: with the timer's rounds out of the way, only the worker's own
    sweep once the queue has room brings the dropped runs back."""
    runs = [f"t{n}" for n in range(6)]
    ingest(services, *runs)
    runner = LocalRunner(LocalJobs(services), workers=1, max_queue=2)
    monkeypatch.setattr(runner, "scheduled_round", lambda startup=False: None)
    runner.start_evals(REF, runs)
    assert runner.waiting == 2  # four dropped
    runner.start()
    try:
        wait_until(lambda: judged(services, *runs))
    finally:
        runner.stop()


class Recorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_a_full_queue_warns_at_most_once_a_minute_not_once_per_job(services: Services) -> None:
    recorder = Recorder()
    logging.getLogger("bench").addHandler(recorder)  # the Powertools logger's own logger
    try:
        runner = LocalRunner(LocalJobs(services), workers=1, max_queue=1)
        runner.start_evals(REF, ["t1", "t2", "t3", "t4"])
        assert sum("work queue full" in m for m in recorder.messages) == 1
        assert runner._take() == ("eval", REF.path, ["t1"])  # room again
        runner.start_evals(REF, ["t5", "t6", "t7"])  # t5 fits, then a new overflow
        assert sum("work queue full" in m for m in recorder.messages) == 1
    finally:
        logging.getLogger("bench").removeHandler(recorder)


class FlakyLLM:
    label = "openai_compat:flaky"

    def __init__(self) -> None:
        self.up = False
        self.calls = 0

    def complete(self, system, messages, *, max_tokens):  # noqa: ANN001, ANN201 - the LLM port
        self.calls += 1
        if not self.up:
            raise LLMUnavailable("down")
        return Completion(json.dumps({"score": 0.4, "reasoning": "meh"}), 10, 5)


def test_an_unavailable_judge_is_retried_then_the_task_waits_for_the_next_round(
        services: Services) -> None:
    llm = FlakyLLM()
    services.provide(llm=llm)
    ingest(services, "t1")
    runner = LocalRunner(LocalJobs(services), workers=1, retry=Backoff(attempts=3, sleep=lambda s: None))
    runner.start()
    try:
        wait_until(lambda: llm.calls == 3 and not runner._queued)
        assert not judged(services, "t1")
        llm.up = True
        runner.scheduled_round(startup=True)
        wait_until(lambda: judged(services, "t1"))
    finally:
        runner.stop()
    assert services.store.ingest.get_task(REF, "t1").eval.judge == "openai_compat:flaky"


def test_the_scheduled_round_purges_what_has_expired(tmp_path: Path) -> None:
    """By the services' clock: events of the fixtures' day (2026-12-02) stay for the retention
    period (30 days) and go at the first round after it, whatever day the test runs on."""
    clock = FixedClock(datetime(2026, 12, 2, 18, tzinfo=UTC))
    services = Services.from_settings(Settings(data_dir=tmp_path), clock)
    sandbox = AgentRef("try--0123456789ab", "demo-agent")
    services.store.agents.create_agent(Agent(login=sandbox.login, slug=sandbox.slug, created_at="",
                                             expires_at=iso(clock.now() - timedelta(seconds=1))))
    services.store.retention.spared_events = 1  # SQLite's purge spares the newest
    services.store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(task_events("t1")))
    runner = LocalRunner(LocalJobs(services), workers=1, clock=services.clock)
    try:
        runner.scheduled_round()
        assert services.store.agents.list_agents(sandbox.login) == []
        assert len(services.store.ingest.task_events(REF, "t1")) == 2
        clock.advance(timedelta(days=30))
        runner.scheduled_round()
        assert len(services.store.ingest.task_events(REF, "t1")) == 1
        assert services.store.ingest.get_task(REF, "t1").status == "success"
    finally:
        services.close()


@contextmanager
def writes_by_workers(db: Database) -> Iterator[list[float]]:
    """The seconds each write transaction that a worker thread opened on `db` held the write
    lock (the real `Database.write`, timed as it runs)."""
    held: list[float] = []
    write = db.write

    @contextmanager
    def timed() -> Iterator[sqlite3.Connection]:
        with write() as conn:
            start = time.monotonic()
            yield conn
        if threading.current_thread().name.startswith("bench-worker"):
            held.append(time.monotonic() - start)

    db.write = timed  # type: ignore[method-assign]
    try:
        yield held
    finally:
        del db.write


def test_an_agents_queued_runs_are_recorded_in_a_few_short_writes(tmp_path: Path) -> None:
    """Not one write per run: a burst's results would queue behind ingest's batches, each
    taking the write lock in turn."""
    services = Services.from_settings(Settings(data_dir=tmp_path))
    runs = [f"t{i}" for i in range(100)]
    try:
        ingest(services, *runs)
        runner = LocalRunner(LocalJobs(services), workers=1)
        runner.start_evals(REF, runs)
        with writes_by_workers(services.store.evals.db) as held:
            runner.start()
            try:
                wait_until(lambda: judged(services, *runs))
            finally:
                runner.stop()
        assert len(held) == -(-len(runs) // EVALS_AT_ONCE)
        assert services.store.agents.get_agent(REF).stats.eval_count == len(runs)
    finally:
        services.close()


class SlowJudge:
    """`Jobs` whose evals take as long as a model's answer would (and record when they ran)."""

    def __init__(self, eval_s: float) -> None:
        self.eval_s = eval_s
        self.ran: list[tuple[float, list[str]]] = []

    def evaluate(self, state: dict[str, Any]) -> list[str]:
        time.sleep(self.eval_s)
        self.ran.append((time.monotonic(), state["task_ids"]))
        return []

    def cluster(self, agent: str) -> None: ...

    def grade(self, run_id: str) -> None: ...

    def purge_expired(self, now: str) -> int:
        return 0

    def sweep(self, workflows: Workflows, *, startup: bool) -> list[AgentRef]:
        return []

    def judge_sessions(self) -> None: ...

    def watch(self, agent: str) -> None: ...

    def watch_active(self) -> None: ...


def test_the_judge_yields_to_a_burst_of_batches_and_catches_up_after_it() -> None:
    jobs = SlowJudge(eval_s=0.05)
    runner = LocalRunner(jobs, workers=1)
    runs = [f"t{i}" for i in range(20 * EVALS_AT_ONCE)]
    runner.start_evals(REF, runs)
    runner.start()
    try:
        burst_ends = time.monotonic() + 2.0
        while time.monotonic() < burst_ends:  # a batch finishing a run every 20 ms
            runner.start_evals(REF, [])
            time.sleep(0.02)
        during = len(jobs.ran)
        # Resting 0.95 s after each 0.05 s job: about 2 in the burst, not 20 or more (nor none).
        assert 1 <= during <= 4
        wait_until(lambda: sum(len(ids) for _, ids in jobs.ran) == len(runs))
    finally:
        runner.stop()
    # Once no batch came for BUSY_FOR_S, the rest of the queue ran back to back, no rests.
    quiet = burst_ends + BUSY_FOR_S
    after = [at for at, _ in jobs.ran if at > quiet + jobs.eval_s]
    assert len(after) > len(jobs.ran) // 2
    assert max(b - a for a, b in itertools.pairwise(after)) < 0.5


class HourlyRound(SlowJudge):
    """`Jobs` of an hourly round with one agent due for its clusters, whose clustering takes
    a while: what ran, in order."""

    def __init__(self) -> None:
        super().__init__(eval_s=0.0)
        self.steps: list[str] = []

    def sweep(self, workflows: Workflows, *, startup: bool) -> list[AgentRef]:
        self.steps.append("sweep")
        return [REF]

    def cluster(self, agent: str) -> None:
        time.sleep(0.3)
        self.steps.append(f"cluster {agent}")

    def judge_sessions(self) -> None:
        self.steps.append("judge_sessions")

    def watch_active(self) -> None:
        self.steps.append("looks")


def test_the_hourly_round_looks_once_the_clusters_it_queued_are_done() -> None:
    """As the state machine on AWS: the failure-cluster monitor sees this hour's clusters."""
    jobs = HourlyRound()
    runner = LocalRunner(jobs, workers=1, interval_s=HANG_GUARD_S * 2)
    runner.start()  # its first round
    try:
        wait_until(lambda: "looks" in jobs.steps)
    finally:
        runner.stop()
    assert jobs.steps == ["sweep", "judge_sessions", f"cluster {REF.path}", "looks"]


class FirstCallFails(FlakyLLM):
    """A judge that cannot be reached for its first call only: of runs judged together, one
    is left for later and the others are judged."""

    def complete(self, system, messages, *, max_tokens):  # noqa: ANN001, ANN201 - the LLM port
        self.up = self.calls > 0
        return super().complete(system, messages, max_tokens=max_tokens)


def test_runs_the_judge_could_not_be_reached_for_are_retried_beside_those_it_judged(
        services: Services) -> None:
    llm = FirstCallFails()
    services.provide(llm=llm)
    ingest(services, "t1", "t2", "t3")
    runner = LocalRunner(LocalJobs(services), workers=1, retry=Backoff(attempts=3, sleep=lambda s: None))
    runner.start()  # the startup sweep queues the three together
    try:
        wait_until(lambda: judged(services, "t1", "t2", "t3"))
    finally:
        runner.stop()
    assert llm.calls == 4  # three, then the one left for later again
