"""The single-machine worker pool: work is found again after a stop, duplicates collapse, a
full queue drops to the sweep, an unavailable judge is retried and then left pending."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from bench_core.clock import FixedClock
from bench_core.domain.models import Agent, AgentMeta, AgentRef, iso
from bench_core.ports.llm import Backoff, Completion, LLMUnavailable
from bench_core.runtime.adapters import Services
from bench_core.runtime.jobs import LocalJobs
from bench_core.settings import Settings
from bench_core.workflows.local import JUDGE_SHARE_UNDER_LOAD, LocalRunner, pause_after

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
def test_while_ingest_is_busy_the_workers_keep_to_their_share_of_the_cpu(workers: int) -> None:
    job_cpu_s = 0.004
    pause = pause_after(job_cpu_s, workers, busy=True)
    share_of_all_workers = workers * job_cpu_s / (job_cpu_s + pause)
    assert share_of_all_workers == pytest.approx(JUDGE_SHARE_UNDER_LOAD)
    assert pause_after(job_cpu_s, workers, busy=False) == 0.0


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
    assert runner._queue.qsize() == 1
    runner.start()
    try:
        wait_until(lambda: judged(services, "t1"))
        # The startup sweep may have run while t1 still filled the queue (a busy machine): a
        # round with room, as the timer's next one, brings t2 back.
        runner.scheduled_round(startup=True)
        wait_until(lambda: judged(services, "t1", "t2"))  # t2 comes back through the sweep
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
        assert runner._queue.get_nowait() == ("eval", REF.path, "t1")  # room again
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
