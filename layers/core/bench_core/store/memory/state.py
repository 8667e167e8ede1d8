"""What every concern of `MemoryStore` shares: the tables as plain Python structures, one lock
that makes each operation atomic (the HTTP server's threads and the local worker share it), the
store's `Rules`, and the agent rows' bookkeeping (ranks, rank refresh, the agent limit) that
ingest, agents, evals and the leaderboard all touch.

Nothing stored is handed out: reads return copies and writes keep copies, so a caller mutating
what it got (or sent) changes nothing here, as with a database.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from pydantic_core import from_json

from ...domain import stats
from ...domain.cluster_series import ClusterKey, ClusterState
from ...domain.errors import TooManyAgents
from ...domain.models import Agent, AgentRef, KeyRecord, TaskState
from ...domain.ranking import rank_values, search_text
from ...domain.sessions import SessionStats
from ...domain.timeseries import Bucket, BucketKey
from ...domain.versions import VersionStats
from ..rules import Rules

if TYPE_CHECKING:
    from ...domain.agreement import Cell
    from ...domain.alerts import Alert, AlertSettings, Delivery
    from ...domain.feedback import Feedback
    from ...domain.live import LiveConnection
    from ...domain.reuse_records import InvocationGrant, PublishedCapability, UsageRecord

_T = TypeVar("_T")


def copied(value: _T) -> _T:
    """A copy sharing nothing mutable with `value`."""
    return copy.deepcopy(value)


@dataclass
class AgentRow:
    """An agent as stored, with what SQLite keeps in columns beside it: its ranks per sort
    (None where it does not qualify), its search text and when its clusters fell due."""

    agent: Agent
    ranks: dict[str, float | None] = field(default_factory=dict)
    search: str | None = None
    cluster_due_at: str | None = None


class StoredEvent(NamedTuple):
    """An event: its arrival (`seq`, SQLite's rowid: the tie-break of equal times), time, task
    and body as JSON text, as it came (decoded on every read: nobody shares it)."""

    seq: int
    ts: str
    task_id: str | None
    body: str


@dataclass
class Counter:
    count: int
    expires_at: str


@dataclass
class User:
    created_at: str
    github_id: int | None = None


@dataclass
class StoredRun:
    """A benchmark run: its record without attempts and each attempt, as JSON text."""

    login: str
    slug: str
    submitted_at: str
    status: str
    body: str
    attempts: list[str]


@dataclass
class Rank:
    run_id: str
    submitted_at: str
    rank_key: str


@dataclass
class Tables:
    """Every table, keyed as SQLite's primary keys are."""

    users: dict[str, User] = field(default_factory=dict)
    keys: dict[str, KeyRecord] = field(default_factory=dict)
    agents: dict[AgentRef, AgentRow] = field(default_factory=dict)
    events: dict[AgentRef, dict[str, StoredEvent]] = field(default_factory=dict)
    """By agent, then event id (the dedupe key)."""
    tasks: dict[AgentRef, dict[str, TaskState]] = field(default_factory=dict)
    """By agent, then task id; a parent known only from its subtasks is a placeholder with no
    start or end (`sort_ts` empty) until its own events come."""
    days: dict[AgentRef, dict[str, dict[str, Any]]] = field(default_factory=dict)
    versions: dict[AgentRef, dict[str, VersionStats]] = field(default_factory=dict)
    """By agent, then version (`domain.versions`)."""
    series: dict[AgentRef, dict[BucketKey, Bucket]] = field(default_factory=dict)
    """By agent, then scope, grain and period (`domain.timeseries`)."""
    cluster_states: dict[AgentRef, ClusterState] = field(default_factory=dict)
    cluster_series: dict[AgentRef, dict[ClusterKey, int]] = field(default_factory=dict)
    """By agent, then cluster, grain and period (`domain.cluster_series`)."""
    sessions: dict[AgentRef, dict[str, SessionStats]] = field(default_factory=dict)
    """By agent, then session id (`domain.sessions`)."""
    judge_days: dict[AgentRef, dict[str, list[float]]] = field(default_factory=dict)
    """By agent and day: [tokens, cost]."""
    insights: dict[AgentRef, str] = field(default_factory=dict)
    grants: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    """(kind, id) -> (body as JSON text, expires_at)."""
    counters: dict[str, Counter] = field(default_factory=dict)
    connections: dict[str, LiveConnection] = field(default_factory=dict)
    capabilities: dict[AgentRef, PublishedCapability] = field(default_factory=dict)
    invocation_grants: dict[tuple[AgentRef, str], InvocationGrant] = field(default_factory=dict)
    quota: dict[tuple[AgentRef, str, str], Counter] = field(default_factory=dict)
    """(agent, caller, bucket) -> its count in the window."""
    usage: dict[tuple[str, str, str], UsageRecord] = field(default_factory=dict)
    """(login, at, call_id) -> the record."""
    suites: dict[str, str] = field(default_factory=dict)
    benchmark_runs: dict[str, StoredRun] = field(default_factory=dict)
    benchmark_ranks: dict[tuple[str, AgentRef], Rank] = field(default_factory=dict)
    """(suite, agent) -> the agent's ranked run of the suite."""
    feedback: dict[AgentRef, dict[str, dict[str, Feedback]]] = field(default_factory=dict)
    """By agent, run id, then feedback id (frozen: shared safely)."""
    alerts: dict[AgentRef, dict[str, Alert]] = field(default_factory=dict)
    """By agent, then alert id (frozen)."""
    deliveries: dict[AgentRef, dict[str, dict[tuple[str, str, int], Delivery]]] = field(
        default_factory=dict)
    """By agent, alert id, then (event, target, attempt) (frozen)."""
    alert_settings: dict[AgentRef, AlertSettings] = field(default_factory=dict)
    alert_looks: dict[AgentRef, str] = field(default_factory=dict)
    """By agent: the hour of the monitors' last look."""
    agreement: dict[AgentRef, dict[str, Cell | None]] = field(default_factory=dict)
    """By agent, each labelled run's cell (`domain.agreement.Cell`; None: not judged)."""
    label_sets: dict[AgentRef, tuple[str, ...]] = field(default_factory=dict)


class Memory:
    """The tables and their lock, handed to every concern of the store. `MemoryStore.open`
    over the same `Memory` is the same data under other rules (as reopening a file is)."""

    def __init__(self) -> None:
        self.tables = Tables()
        self._lock = threading.RLock()
        self._seq = 0

    @contextmanager
    def locked(self) -> Iterator[Tables]:
        """The tables, for one operation: reads and writes alike, since a dict another thread
        changes cannot be iterated."""
        with self._lock:
            yield self.tables

    def next_seq(self) -> int:
        """Arrival order of events (SQLite's rowid), the tie-break of equal times."""
        self._seq += 1
        return self._seq


def new_row(agent: Agent) -> AgentRow:
    """A stored agent starts with an empty latency histogram (`stats.empty_histogram`)."""
    agent.stats.latency_hist = stats.empty_histogram()
    return AgentRow(agent)


def admit_agent(tables: Tables, login: str, most: int) -> None:
    """Refuse a new agent of `login` if it has `most` already; checked before anything is
    written, so a refused agent leaves nothing behind."""
    if sum(ref.login == login for ref in tables.agents) >= most:
        raise TooManyAgents(login, most)


def refresh_rank(row: AgentRow, rules: Rules) -> None:
    """Recompute the agent's ranks, now; called by every write that changes what they derive
    from (counters, visibility, names), as SQLite's `agents.refresh_rank` is."""
    row.ranks = rank_values(row.agent, rules.qualification, rules.clock.now())
    row.search = search_text(row.agent)


def live_agent(tables: Tables, ref: AgentRef, now: str) -> Agent | None:
    """A copy of the agent; a temporary agent past its expiry is gone, even before
    `purge_expired` runs."""
    row = tables.agents.get(ref)
    if row is None:
        return None
    expires = row.agent.expires_at
    return copied(row.agent) if expires is None or expires > now else None


def read_task(tables: Tables, ref: AgentRef, task_id: str) -> TaskState | None:
    """A copy of a task that has started or ended (a placeholder parent is none yet)."""
    task = tables.tasks.get(ref, {}).get(task_id)
    return copied(task) if task is not None and task.sort_ts else None


def read_insights(tables: Tables, ref: AgentRef) -> dict[str, Any] | None:
    text = tables.insights.get(ref)
    return None if text is None else load(text)


def load(text: str) -> Any:
    """Stored JSON text as fresh values."""
    return from_json(text)


class Concern:
    """One concern of `MemoryStore`: it works on the `Memory` it is given, by the store's
    `Rules`."""

    def __init__(self, memory: Memory, rules: Rules = Rules()) -> None:
        self.memory = memory
        self.rules = rules
