"""Sessions: the runs of one conversation, and who it was with.

A run's session and user are its root task's, as first recorded (`folding.fold_task`: the SDK's
`agent.session`, OTLP's `session.id`/`gen_ai.conversation.id` and their kin, the original
client's metadata), within `field_limits.SESSION_RULE`. A session counts its runs as each
finishes (`RunDelta`): one small record per session kept on write (`SessionStats`), and a
session's runs in the order they started, read in one indexed range (`SessionRun`). A running
run is the runs list's and its page's until it ends.

A user id names a person: others than the owner see it only as a pseudonym
(`privacy.user_view`), and only the owner may look sessions up by it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .models import AgentRef, EvalResult, RunDelta, TaskState

USER_FIELDS = ("user_id", "userId")
"""Where the original client's metadata names the run's user (`folding.session_from_metadata`)."""
USER_ATTRIBUTES = ("user.id", "enduser.id", "langfuse.user.id", "ai.telemetry.metadata.userId",
                   "ai.telemetry.metadata.user_id")
"""The span attributes that name the run's user (`ingest.otlp.conventions.USER`): OTel's,
OpenInference's (`user.id`), Langfuse's and the Vercel AI SDK's telemetry metadata."""
SESSION_PAGE = 50
"""Sessions a page of the list holds."""
SESSION_RUNS = 100
"""Runs a session's page shows (its first ones, in order): each is read for its turn."""


@dataclass
class SessionStats:
    """One session's counters: its finished runs as the agent's own count them."""

    session_id: str
    user_id: str | None = None
    runs: int = 0
    successes: int = 0
    cost_usd_total: float = 0.0
    evidence_cost_usd_total: float = 0.0
    tokens: int = 0
    duration_ms_total: float = 0.0
    first_at: str | None = None
    """When its first run started: the order of the list (newest first)."""
    last_at: str | None = None
    """When its last run ended."""
    eval: EvalResult | None = None
    """The judge's verdict on the whole conversation (`evals/session_judge.py`)."""
    judged_through: str | None = None
    """The `last_at` its verdict covered: a run ending later makes the session due again."""

    @property
    def failures(self) -> int:
        return self.runs - self.successes

    def add_run(self, run: RunDelta) -> None:
        self.user_id = self.user_id or run.user_id
        self.runs += 1
        self.successes += run.success
        self.cost_usd_total += run.cost_usd
        self.evidence_cost_usd_total += run.evidence_cost_usd
        self.tokens += run.tokens
        self.duration_ms_total += run.duration_ms or 0.0
        self.first_at = min((t for t in (self.first_at, run.started_at) if t), default=None)
        self.last_at = max((t for t in (self.last_at, run.ended_at) if t), default=None)


@dataclass
class SessionRun:
    """A finished run as its session lists it."""

    run_id: str
    name: str | None
    status: str
    started_at: str
    ended_at: str | None
    duration_ms: float | None
    cost_usd: float
    evidence_cost_usd: float
    tokens: int

    @classmethod
    def of_task(cls, task: TaskState) -> SessionRun:
        usage = task.evidence
        return cls(run_id=task.task_id, name=task.name, status=task.status,
                   started_at=task.sort_ts, ended_at=task.ended_at, duration_ms=task.duration_ms,
                   cost_usd=task.cost_usd or 0.0,
                   evidence_cost_usd=(usage.cost_usd or 0.0) if usage is not None else 0.0,
                   tokens=((usage.input_tokens or 0) + (usage.output_tokens or 0))
                   if usage is not None else 0)


def turn_order(task: TaskState) -> tuple[str, str, str]:
    """Where a run comes in its session: by start, then when it was recorded (turns sent in
    the same millisecond keep the order they were sent in), then id."""
    return task.sort_ts, task.recorded or "", task.task_id


@dataclass(frozen=True)
class SessionFilter:
    """What the sessions list may be narrowed by: a user (raw: the owner's filter), whether any
    run failed, and when the session began (ISO text, `since` inclusive, `until` exclusive)."""

    user_id: str | None = None
    status: str | None = None
    """"failed" (a run failed) or "success" (every run succeeded)."""
    since: str | None = None
    until: str | None = None

    def holds(self, s: SessionStats) -> bool:
        first = s.first_at or ""
        return ((self.user_id is None or s.user_id == self.user_id)
                and (self.status is None or (self.status == "failed") == (s.failures > 0))
                and (self.since is None or first >= self.since)
                and (self.until is None or first < self.until))


STATUSES = ("success", "failed")
IDLE_SESSIONS = 50
"""Sessions the hourly round judges at most (the oldest idle first; the next round goes on)."""


@dataclass(frozen=True)
class IdleSession:
    """A session ended (no run for the idle time) and not judged since its last run."""

    ref: AgentRef
    session_id: str
    last_at: str


def judge_due(s: SessionStats, before: str) -> bool:
    """Whether the session's last run ended before `before` and no verdict covers it."""
    return s.last_at is not None and s.last_at < before and s.judged_through != s.last_at


def runs_by_session(runs: Iterable[RunDelta]) -> dict[str, SessionStats]:
    """What a batch's finished runs add to each session they are part of."""
    out: dict[str, SessionStats] = {}
    for run in runs:
        if run.session_id is not None:
            out.setdefault(run.session_id, SessionStats(run.session_id)).add_run(run)
    return out


def merged(kept: SessionStats, added: SessionStats) -> SessionStats:
    """`kept` with a batch's `added` counted in (the first user named stays)."""
    return SessionStats(
        session_id=kept.session_id, user_id=kept.user_id or added.user_id,
        runs=kept.runs + added.runs, successes=kept.successes + added.successes,
        cost_usd_total=kept.cost_usd_total + added.cost_usd_total,
        evidence_cost_usd_total=kept.evidence_cost_usd_total + added.evidence_cost_usd_total,
        tokens=kept.tokens + added.tokens,
        duration_ms_total=kept.duration_ms_total + added.duration_ms_total,
        first_at=min((t for t in (kept.first_at, added.first_at) if t), default=None),
        last_at=max((t for t in (kept.last_at, added.last_at) if t), default=None),
        eval=kept.eval, judged_through=kept.judged_through)


def list_key(s: SessionStats) -> str:
    """What the list sorts by, newest first: when the session began, then its id."""
    return f"{s.first_at or ''}#{s.session_id}"
