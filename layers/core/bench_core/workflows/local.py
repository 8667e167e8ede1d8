"""The single-machine runner: a bounded worker pool in the server process, and an hourly timer
(which also purges expired data, as DynamoDB's TTL does on AWS). What a job does is the
`Jobs` it is handed (the workflows' own steps, `runtime/jobs.py`); the runner only schedules.

The queue lives in memory, so nothing in it survives a stop; nothing needs to. What it holds is
found again from the store: at start (and every hour) the sweep re-finds finished runs without
a result, and agents whose failures are not clustered yet are still marked due. A full queue
drops work the same way, to be swept later, rather than growing without bound.

Judging shares the interpreter with ingest, so while batches keep arriving the workers take
turns with it: after each job a worker pauses in proportion to the CPU the job used, which
keeps the judge to `JUDGE_SHARE_UNDER_LOAD` of the CPU (a judge that waits on a remote model
uses little CPU and hardly pauses). A score may come later; a batch is never slowed by it.
"""

from __future__ import annotations

import queue
import threading
import time

from ..clock import SYSTEM_CLOCK, Clock
from ..domain.models import AgentRef, iso
from ..log import logger
from ..ports.llm import Backoff, LLMUnavailable
from ..ports.workflows import Jobs, eval_start
from ..settings import JudgeSettings

Job = tuple[str, str, str]
"""("eval", "login/slug", task_id), ("cluster", "login/slug", "") or ("benchmark", run_id, "")."""
HOUR_S = 3600.0
OVERFLOW_WARN_EVERY_S = 60.0
JUDGE_SHARE_UNDER_LOAD = 0.25
"""Of the CPU, what all workers together may take while ingest is busy."""
BUSY_FOR_S = 1.0
"""Ingest counts as busy this long after the last `start_evals`: a batch that finished runs
(the hourly sweep queues through it too, so one second after a sweep also counts)."""


def pause_after(job_cpu_s: float, workers: int, busy: bool) -> float:
    """Seconds a worker waits after a job that used `job_cpu_s` of CPU, so that `workers` of
    them together take `JUDGE_SHARE_UNDER_LOAD` of the CPU while ingest is busy."""
    if not busy:
        return 0.0
    return job_cpu_s * (workers / JUDGE_SHARE_UNDER_LOAD - 1)


class LocalRunner:
    def __init__(self, jobs: Jobs, *, workers: int = JudgeSettings.workers, max_queue: int = 10_000,
                 interval_s: float = HOUR_S, retry: Backoff | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.jobs = jobs
        self.clock = clock
        self.workers = workers
        self.interval_s = interval_s
        self._queue: queue.Queue[Job | None] = queue.Queue(max_queue)
        self._queued: set[Job] = set()
        self._refused = 0
        self._warned_at: float | None = None
        self._last_batch_at = float("-inf")
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._retry = retry or Backoff(attempts=4, base_s=5.0, cap_s=60.0, sleep=self._stop.wait)

    # ---- the Workflows port ----------------------------------------------------------------

    def start_evals(self, ref: AgentRef, task_ids: list[str], *,
                    private: bool | None = None, marked: bool = False) -> None:
        """One job per run (what is queued already is not queued twice); each reads its agent."""
        self._last_batch_at = time.monotonic()
        for task_id in task_ids:
            self._submit(("eval", ref.path, task_id))

    def start_clusters(self, refs: list[AgentRef]) -> None:
        for ref in refs:
            self._submit(("cluster", ref.path, ""))

    def start_benchmark(self, run_id: str) -> None:
        if not self._submit(("benchmark", run_id, "")):
            raise RuntimeError("the work queue is full")

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Start the workers, and the timer whose first round is the startup sweep."""
        if self._threads:
            return
        self._stop.clear()
        self._threads = [threading.Thread(target=self._work, name=f"bench-worker-{i}", daemon=True)
                         for i in range(self.workers)]
        self._threads.append(threading.Thread(target=self._timer, name="bench-timer", daemon=True))
        for thread in self._threads:
            thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop taking jobs; a job in progress finishes (or is found again at the next start)."""
        self._stop.set()
        for _ in range(self.workers):
            try:
                self._queue.put_nowait(None)
            except queue.Full:
                break
        for thread in self._threads:
            thread.join(timeout_s)
        self._threads = []

    # ---- inside ----------------------------------------------------------------------------

    def _submit(self, job: Job) -> bool:
        """Queue `job` (True) unless the queue is full (False); a job already queued is kept."""
        with self._lock:
            if job in self._queued:
                return True
            try:
                self._queue.put_nowait(job)
            except queue.Full:
                self._refused += 1
                # At most once a minute, with a count: a log line per refused job cost more
                # than the ingest that caused it, while ingest was already outpacing us.
                now = time.monotonic()
                if self._warned_at is None or now - self._warned_at >= OVERFLOW_WARN_EVERY_S:
                    logger.warning("work queue full; the sweep will pick up what does not fit",
                                   extra={"job": job, "refused": self._refused})
                    self._warned_at, self._refused = now, 0
                return False
            self._queued.add(job)
        return True

    def _timer(self) -> None:
        self.scheduled_round(startup=True)
        while not self._stop.wait(self.interval_s):
            self.scheduled_round()

    def scheduled_round(self, startup: bool = False) -> None:
        """What the hourly schedule does on AWS: sweep evals, queue due agents' clusters. At
        startup nothing can be in flight, so even the youngest unjudged runs are swept. Also
        what DynamoDB's TTL does there: delete what has expired (`Jobs.purge_expired`)."""
        try:
            purged = self.jobs.purge_expired(iso(self.clock.now()))
            if purged:
                logger.info("expired data purged", extra={"rows": purged})
        except Exception:
            logger.exception("purge failed; retrying at the next round")
        try:
            self.start_clusters(self.jobs.sweep(self, startup=startup))
        except Exception:
            logger.exception("scheduled round failed; retrying at the next one")

    def _work(self) -> None:
        while not self._stop.is_set():
            job = self._queue.get()
            if job is None:
                return
            cpu_before = time.thread_time()
            try:
                self._run(job)
            except Exception:
                logger.exception("job failed", extra={"job": job})
            finally:
                with self._lock:
                    self._queued.discard(job)
            busy = time.monotonic() - self._last_batch_at < BUSY_FOR_S
            self._stop.wait(pause_after(time.thread_time() - cpu_before, self.workers, busy))

    def _run(self, job: Job) -> None:
        kind, agent, task_id = job
        if kind == "cluster":
            self.jobs.cluster(agent)
            return
        if kind == "benchmark":
            # The model adapter retries each call with backoff; a judge still down fails the
            # run with the reason, and the submitter resumes it by sending it again.
            self.jobs.grade(agent)
            return
        for attempt in range(1, self._retry.attempts + 1):
            try:
                self.jobs.evaluate(eval_start(agent, [task_id]))
                return
            except LLMUnavailable as exc:
                if attempt == self._retry.attempts or self._stop.is_set():
                    logger.warning("judge unavailable; the sweep will retry",
                                   extra={"job": job, "error": str(exc)})
                    return
                self._retry.wait(attempt)
