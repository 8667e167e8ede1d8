"""The single-machine runner: a bounded worker pool in the server process, and an hourly timer
(which also purges expired data, as DynamoDB's TTL does on AWS). What a job does is the
`Jobs` it is handed (the workflows' own steps, `runtime/jobs.py`); the runner only schedules.

The queue lives in memory, so nothing in it survives a stop; nothing needs to. What it holds is
found again from the store: at start (and every hour) the sweep re-finds finished runs without
a result, and agents whose failures are not clustered yet are still marked due. A full queue
drops work the same way rather than growing without bound, and once it has drained, a worker
sweeps at once for what it dropped (a burst's runs are judged minutes after it, not at the next
hour).

The judge stays off ingest's write path. A worker takes an agent's queued runs together (up to
`EVALS_AT_ONCE`), so their results are one short write, not one write per run queued behind the
batches. And judging shares the interpreter with ingest, so while batches keep arriving the
workers yield: before each job a worker rests in proportion to the time its last job took, which
keeps the judge to `JUDGE_SHARE_UNDER_LOAD` of the time, and it resumes at full speed as soon as ingest
goes quiet (`BUSY_FOR_S` without a batch), catching up on what queued. Time, not CPU, is what is
measured: the judge's calls run on threads of their own (`evals/workflow.py`), and a job slowed
by ingest (waiting for the interpreter or the write lock) then rests longer, not shorter. A
score may come later; a batch is never slowed by it.
"""

from __future__ import annotations

import threading
import time
from collections import deque

from ..clock import SYSTEM_CLOCK, Clock
from ..domain.models import AgentRef, iso
from ..log import logger
from ..ports.llm import Backoff, LLMUnavailable
from ..ports.workflows import Jobs, eval_start
from ..settings import JudgeSettings

Job = tuple[str, str, str]
"""("eval", "login/slug", task_id), ("cluster", "login/slug", "") or ("benchmark", run_id, "")."""
Work = tuple[str, str, list[str]]
"""What a worker takes at once: ("eval", "login/slug", task ids), one other job, or ("sweep",
"", []) once the queue has drained after refusing work."""
HOUR_S = 3600.0
OVERFLOW_WARN_EVERY_S = 60.0
LOOKS_WAIT_S = 600.0
"""How long the hourly looks wait for the clusters their round queued: past it they look
without them (the failure-cluster monitor sees them at the next round)."""
EVALS_AT_ONCE = 32
"""An agent's queued runs judged together, and recorded in one write (`evals/workflow.py`
`JUDGES_AT_ONCE` judge calls side by side)."""
JUDGE_SHARE_UNDER_LOAD = 0.05
"""Of the time, what all workers together may spend on jobs while ingest is busy."""
BUSY_FOR_S = 1.0
"""Ingest counts as busy this long after the last `start_evals`: a batch that finished runs
(the hourly sweep queues through it too, so one second after a sweep also counts)."""
MAX_REST_S = 10.0
"""The longest rest: a job that took long spent it waiting (on a remote model, a retry's
backoff), not on the interpreter: a remote judge answering in 2 s still judges 32 runs every 12 s
per worker through a burst, while the offline judge's jobs (a few hundredths of a second) keep
to the share."""
REST_CHECK_S = 0.05
"""How often a resting worker looks whether ingest has gone quiet."""


def rest_after(job_s: float, workers: int, busy: bool) -> float:
    """Seconds a worker rests after a job that took `job_s`, so that `workers` of them together
    spend `JUDGE_SHARE_UNDER_LOAD` of the time on jobs while ingest is busy."""
    if not busy:
        return 0.0
    return min(MAX_REST_S, job_s * (workers / JUDGE_SHARE_UNDER_LOAD - 1))


class LocalRunner:
    def __init__(self, jobs: Jobs, *, workers: int = JudgeSettings.workers, max_queue: int = 10_000,
                 interval_s: float = HOUR_S, retry: Backoff | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.jobs = jobs
        self.clock = clock
        self.workers = workers
        self.interval_s = interval_s
        self.max_queue = max_queue
        self._others: deque[Job] = deque()
        self._evals: dict[str, list[str]] = {}
        """Each agent's queued runs, agents in the order their first run came."""
        self._queued: set[Job] = set()
        """What is queued or being worked on: a job already here is not queued again."""
        self._waiting = 0
        self._refused = 0
        self._dropped = False
        """Whether the queue refused work since the last sweep for it."""
        self._warned_at: float | None = None
        self._last_batch_at = float("-inf")
        self._has_work = threading.Condition()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._retry = retry or Backoff(attempts=4, base_s=5.0, cap_s=60.0, sleep=self._stop.wait)

    # ---- the Workflows port ----------------------------------------------------------------

    def start_evals(self, ref: AgentRef, task_ids: list[str], *,
                    private: bool | None = None, marked: bool = False) -> None:
        """One job per run (what is queued already is not queued twice); a worker takes an
        agent's together, reading the agent once for them."""
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
        with self._has_work:
            self._has_work.notify_all()
        for thread in self._threads:
            thread.join(timeout_s)
        self._threads = []

    @property
    def waiting(self) -> int:
        """Jobs queued and not yet taken by a worker."""
        return self._waiting

    # ---- inside ----------------------------------------------------------------------------

    def _submit(self, job: Job) -> bool:
        """Queue `job` (True) unless the queue is full (False); a job already queued is kept."""
        with self._has_work:
            if job in self._queued:
                return True
            if self._waiting >= self.max_queue:
                self._refused += 1
                # At most once a minute, with a count: a log line per refused job cost more
                # than the ingest that caused it, while ingest was already outpacing us.
                now = time.monotonic()
                if self._warned_at is None or now - self._warned_at >= OVERFLOW_WARN_EVERY_S:
                    logger.warning("work queue full; swept again once it has drained",
                                   extra={"job": job, "refused": self._refused})
                    self._warned_at, self._refused = now, 0
                self._dropped = True
                return False
            kind, subject, task_id = job
            if kind == "eval":
                self._evals.setdefault(subject, []).append(task_id)
            else:
                self._others.append(job)
            self._queued.add(job)
            self._waiting += 1
            self._has_work.notify()
        return True

    def _take(self) -> Work | None:
        """The next work, waiting for some; None once stopping. Clusters and grading go first
        (they are few); then the agent whose runs have waited longest, up to `EVALS_AT_ONCE`
        of them."""
        with self._has_work:
            while not self._waiting:
                if self._stop.is_set():
                    return None
                if self._dropped:  # drained: find again what a full queue dropped
                    self._dropped = False
                    return "sweep", "", []
                self._has_work.wait()
            if self._stop.is_set():
                return None
            if self._others:
                kind, subject, _ = self._others.popleft()
                self._waiting -= 1
                return kind, subject, []
            agent, task_ids = next(iter(self._evals.items()))
            taken, rest = task_ids[:EVALS_AT_ONCE], task_ids[EVALS_AT_ONCE:]
            if rest:
                self._evals[agent] = rest
            else:
                del self._evals[agent]
            self._waiting -= len(taken)
            return "eval", agent, taken

    def _done(self, work: Work) -> None:
        kind, subject, task_ids = work
        with self._has_work:
            self._queued.difference_update((kind, subject, t) for t in task_ids or [""])
            self._has_work.notify_all()  # the hourly looks may wait for this one

    def _timer(self) -> None:
        self.scheduled_round(startup=True)
        while not self._stop.wait(self.interval_s):
            self.scheduled_round()

    def scheduled_round(self, startup: bool = False) -> None:
        """What the hourly state machine does on AWS, in its order: sweep evals, queue due
        agents' clusters, judge the sessions that have ended (`Jobs.judge_sessions`, in this
        timer's thread), then, in a thread of its own once the clusters queued are done (so
        that the failure-cluster monitor sees them), look at the monitors of the agents active
        lately (`Jobs.watch_active`). At startup nothing can be in flight, so even the
        youngest unjudged runs are swept. Also what DynamoDB's TTL does there: delete what has
        expired (`Jobs.purge_expired`)."""
        try:
            purged = self.jobs.purge_expired(iso(self.clock.now()))
            if purged:
                logger.info("expired data purged", extra={"rows": purged})
        except Exception:
            logger.exception("purge failed; retrying at the next round")
        clusters: set[Job] = set()
        try:
            due = self.jobs.sweep(self, startup=startup)
            self.start_clusters(due)
            clusters = {("cluster", ref.path, "") for ref in due}
        except Exception:
            logger.exception("scheduled round failed; retrying at the next one")
        try:
            self.jobs.judge_sessions()
        except Exception:
            logger.exception("judging sessions failed; retrying at the next round")
        threading.Thread(target=self._look_after, args=(clusters,), name="bench-alerts-hourly",
                         daemon=True).start()

    def _look_after(self, clusters: set[Job]) -> None:
        """The hourly looks, once none of `clusters` is queued or in hand (a job the full
        queue refused is not waited for), at most `LOOKS_WAIT_S` later; at once if no worker
        runs (the runner was never started)."""
        with self._has_work:
            self._has_work.wait_for(lambda: not self._threads or self._stop.is_set()
                                    or not clusters & self._queued, LOOKS_WAIT_S)
        try:
            self.jobs.watch_active()
        except Exception:
            logger.exception("the hourly looks failed; retrying at the next round")

    def _work(self) -> None:
        last_job_s = 0.0
        while (work := self._take()) is not None:
            # Rest before the job, for the last one: a worker woken by a burst's first batch
            # yields to it at once rather than after a job of its own.
            self._rest(last_job_s)
            started = time.monotonic()
            try:
                if not self._stop.is_set():
                    self._run(work)
            except Exception:
                logger.exception("job failed", extra={"job": work})
            finally:
                self._done(work)
            last_job_s = time.monotonic() - started

    def _busy(self) -> bool:
        return time.monotonic() - self._last_batch_at < BUSY_FOR_S

    def _rest(self, job_s: float) -> None:
        """Rest for a job that took `job_s` while ingest is busy; cut short when it goes quiet
        (or we stop)."""
        until = time.monotonic() + rest_after(job_s, self.workers, self._busy())
        while (left := until - time.monotonic()) > 0 and self._busy():
            if self._stop.wait(min(left, REST_CHECK_S)):
                return

    def _run(self, work: Work) -> None:
        kind, subject, task_ids = work
        if kind == "sweep":  # what is queued or in hand already is not queued twice
            self.start_clusters(self.jobs.sweep(self, startup=True))
            return
        if kind == "cluster":
            self.jobs.cluster(subject)
            return
        if kind == "benchmark":
            # The model adapter retries each call with backoff; a judge still down fails the
            # run with the reason, and the submitter resumes it by sending it again.
            self.jobs.grade(subject)
            return
        for attempt in range(1, self._retry.attempts + 1):
            try:
                task_ids = self.jobs.evaluate(eval_start(subject, task_ids))
                error = "the judge could not be reached for some runs"
            except LLMUnavailable as exc:
                error = str(exc)
            if not task_ids:
                self.jobs.watch(subject)  # the agent's runs are counted and judged: a look
                return
            if attempt == self._retry.attempts or self._stop.is_set():
                logger.warning("judge unavailable; the sweep will retry",
                               extra={"agent": subject, "runs": len(task_ids), "error": error})
                return
            self._retry.wait(attempt)
