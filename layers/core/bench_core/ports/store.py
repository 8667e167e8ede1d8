"""The Store port: everything Bench keeps, as one small protocol per concern.

A `Store` is one object per concern (`store.ingest`, `store.runs`, `store.agents`,
`store.accounts`, `store.evals`, `store.leaderboard`, `store.reuse`, `store.benchmarks`,
`store.retention`, `store.feedback`, `store.alerts`, `store.timeseries`, `store.clusters`), each
typed by its
protocol here, so a use case names the concerns it uses (`ports.services.WithRuns`, ...) and
sees nothing else. Each adapter keeps one class per concern, in a file of the concern's name,
over what its concerns share, and assembles them into a `Store`:

- `store/sqlite/store.py` `SqliteStore`: the embedded default, one file in WAL mode (`Database`).
- `store/dynamodb/store.py` `DynamoStore`: one DynamoDB table for AWS (`Table`).
- `store/memory/store.py` `MemoryStore`: plain Python structures behind one lock (`Memory`),
  for tests and throwaway servers.

All pass the same contract suite, one file per concern (tests/contract/store/). Ingest is the
only complex write; every adapter delegates its meaning to `bench_core.domain.folding` and they
differ only in how they make it atomic.

Adding an operation touches five places: its concern's protocol here, that concern's class in
each adapter, and the concern's contract suite (`tests/contract/store/test_<concern>.py`).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..clock import Clock
from ..domain.models import (
    Agent,
    AgentMeta,
    AgentRef,
    CleanEvent,
    EvalResult,
    IngestOutcome,
    IngestWrite,
    KeyRecord,
    TaskState,
)
from ..domain.run_list import RunFilter
from ..domain.sessions import IdleSession, SessionFilter, SessionRun, SessionStats
from ..domain.versions import VersionStats

if TYPE_CHECKING:
    from ..domain.agreement import AgreementTable, Cell
    from ..domain.alerts import Alert, AlertSettings, Delivery
    from ..domain.benchmark_records import RunRecord
    from ..domain.cluster_series import ClusterKey, ClusterState
    from ..domain.feedback import Feedback
    from ..domain.live import LiveConnection
    from ..domain.reuse_records import InvocationGrant, PublishedCapability, QuotaWindow, UsageRecord
    from ..domain.timeseries import Bucket, BucketKey


@dataclass(frozen=True)
class RunHead:
    """What every read of a run starts with: the agent, the task asked for and the agent's
    failure insights, each as `get_agent`, `get_task` and `get_insights` read it."""

    agent: Agent | None
    task: TaskState | None
    insights: dict[str, Any] | None


@dataclass(frozen=True)
class RunCounts:
    """What a run's header counts of the spans under its root, read without reading them."""

    spans: int
    failed: int
    first_failed: str | None
    """The id of the first failed span in start order (`domain.runs.span_key`)."""
    failures: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    """Where the failed spans stand in start order (`span_key`), the first `FAILURES_KEPT`
    of them: a run too big to read whole goes from one to the next (its next error)."""


@dataclass(frozen=True)
class RunsPage:
    """A page of the runs list: its runs, the cursor of the next page (None on the last), and
    where a store searches a bounded number of runs per page (DynamoDB's search of spans), how
    many runs it looked at and the start of the oldest (None where an index answered)."""

    runs: list[TaskState]
    next_cursor: str | None
    examined: int | None = None
    looked_back_to: str | None = None


@dataclass(frozen=True)
class SessionsPage:
    """A page of an agent's sessions, newest first, and the cursor of the next (None on the
    last)."""

    sessions: list[SessionStats]
    next_cursor: str | None


FAILURES_KEPT = 1000


class RunStore(Protocol):
    """Runs (`bench_core.domain.runs`): every task records its run; both adapters keep a run's
    spans in start order (SQLite `tasks_by_run`, DynamoDB's `runs` index) and read them a
    bounded page at a time, whatever the run's size."""

    def run_head(self, ref: AgentRef, task_id: str) -> RunHead:
        """One round trip where the adapter can make it one (DynamoDB: the three items share
        the agent's partition): a run's page and JSON otherwise wait on three in a row."""
        ...

    def run_spans(self, ref: AgentRef, run: TaskState, *, limit: int,
                  after: tuple[str, str] | None = None, content: bool = True,
                  inputs: bool = True, outputs: bool = True) -> list[TaskState]:
        """At most `limit` of the started or finished tasks recorded under the run whose root
        is `run` (as `get_task` read it), the root left out, in start order
        (`domain.runs.span_key`; SQLite puts ties of a moment whose ids are of different kinds,
        an OTLP span's and another's, in order by kind first: `store/sqlite/task_ids.py`),
        after the one keyed `after`. `content=False` may leave out
        all but what a tree's rows draw (parent, name, status, times, duration, own cost, the
        model called, the evidence's cost, tokens and calls): inputs, outputs, metadata, logs,
        evals (DynamoDB reads only the rows of its `spans` index); an adapter that cannot leave
        them out cheaply returns them anyway. With content, `inputs=False` (`outputs=False`)
        may leave out the inputs (outputs): a read for a viewer who may not see them (SQLite
        does; DynamoDB keeps a task's content in one attribute). DynamoDB may return a few
        more than `limit`: a page holds a pack of spans whole
        (`store/dynamodb/codec/packs.py`)."""
        ...

    def session_runs(self, ref: AgentRef, session_id: str, *, limit: int
                     ) -> tuple[SessionStats | None, list[SessionRun]]:
        """A session's counters (None for a session with no finished run) and its first
        `limit` finished runs in the order they started, in one indexed read (SQLite: the
        `tasks_by_session` index; DynamoDB: one Query of the agent's `SESSION#{session}#` items)."""
        ...

    def list_sessions(self, ref: AgentRef, where: SessionFilter, *, limit: int,
                      cursor: str | None = None) -> SessionsPage:
        """The agent's sessions that `where` keeps, newest first (`sessions.list_key`), from
        their counters kept on write, never from their runs."""
        ...

    def run_counts(self, ref: AgentRef, run: TaskState) -> RunCounts:
        """The spans under the root `run`, those that failed, and the first that did, counted
        without reading the spans into memory (SQLite: its indexes alone; DynamoDB: one paged
        Query of the `spans` index that returns the failed spans' keys)."""
        ...

    def list_runs(self, ref: AgentRef, where: RunFilter, *, limit: int = 50,
                  cursor: str | None = None) -> RunsPage:
        """Root tasks that `where` keeps, in its order (`RunFilter.page`), and the cursor of
        the next page (a page may hold fewer than `limit` where the adapter bounds what it
        examines: then it says how far it looked)."""
        ...


class IngestStore(Protocol):
    """Events in, tasks and daily counters out: the write path and its reads."""

    # dedupe by event id, fold, update counters -- atomically. `dropped` (events the client
    # could not send) counts only if the batch brought a new event: a replay does not.
    def ingest(self, login: str, meta: AgentMeta, events: list[CleanEvent],
               dropped: int = 0) -> IngestOutcome: ...
    def ingest_many(self, writes: Sequence[IngestWrite]) -> list[IngestOutcome | Exception]:
        """Each write as `ingest` makes it, in one commit where the store can (SQLite: one
        transaction; if a write fails it is undone and each written on its own), so that
        several requests' batches pay for one: a write that fails stores nothing and its
        exception is its result, in the writes' order."""
        ...

    # reads
    def recent_events(self, ref: AgentRef, limit: int) -> list[dict[str, Any]]: ...
    def get_task(self, ref: AgentRef, task_id: str, *, consistent: bool = True
                 ) -> TaskState | None:
        """The task, with its content; not `consistent`: a read that may miss the last
        moment's writes, where the store makes that cheaper (DynamoDB: half the read units)."""
        ...

    def list_tasks(self, ref: AgentRef, *, parent: str | None = None, status: str | None = None,
                   limit: int = 50, cursor: str | None = None
                   ) -> tuple[list[TaskState], str | None]: ...
    def subtask_ids(self, ref: AgentRef, task_ids: list[str]) -> dict[str, list[str]]: ...
    def task_events(self, ref: AgentRef, task_id: str) -> list[dict[str, Any]]: ...
    def daily(self, ref: AgentRef, since_day: str) -> list[dict[str, Any]]: ...


class AgentStore(Protocol):
    """Agents by reference: their names, privacy settings and stats."""

    def get_agent(self, ref: AgentRef) -> Agent | None: ...
    def list_agents(self, login: str) -> list[Agent]: ...
    def update_agent(self, ref: AgentRef, changes: dict[str, Any]) -> Agent | None: ...
    def create_agent(self, agent: Agent) -> bool:
        """Create `agent` (its names and privacy settings; no stats) before its first event,
        so it can start out private; False, changing nothing, if it exists."""
        ...
    def agent_versions(self, ref: AgentRef) -> list[VersionStats]:
        """Each version's counters (`domain.versions`), kept as its runs and their evals are
        written, the newest version first; none for an agent that sent none."""
        ...


class AccountStore(Protocol):
    """Accounts (bench_core.accounts): keys, users, short-lived grants, rate-limit counters
    and live-feed connections."""

    # keys and users
    def create_key(self, record: KeyRecord) -> None: ...
    def key_by_hash(self, key_hash: str) -> KeyRecord | None: ...
    def list_keys(self, login: str | None = None) -> list[KeyRecord]: ...
    def revoke_key(self, key_hash: str, when: str) -> bool: ...
    def touch_key(self, key_hash: str, when: str) -> None: ...

    def claim_login(self, login: str, github_id: int | None, when: str) -> bool:
        """Create the user `login` if new and bind it to `github_id` if it has no GitHub
        account yet, atomically; False if it belongs to another GitHub account (a renamed
        account's old login taken by someone else). `github_id` None (local sign-in) binds
        nothing and is always True."""
        ...

    # short-lived records (bench_core.accounts): sessions, device logins; kept until
    # `expires_at`, and never returned after it even where deletion is lazy (DynamoDB TTL)
    def put_grant(self, kind: str, grant_id: str, body: dict[str, Any], expires_at: str,
                  now: str) -> bool:
        """Store a record unless one of this kind and id is live at `now` (then False)."""
        ...
    def get_grant(self, kind: str, grant_id: str, now: str) -> dict[str, Any] | None: ...
    def update_grant(self, kind: str, grant_id: str, expected: dict[str, Any],
                     changes: dict[str, Any], now: str) -> bool:
        """Compare-and-set: apply `changes` to the live record if its body holds every
        `expected` value; False (nothing changed) otherwise."""
        ...
    def delete_grant(self, kind: str, grant_id: str) -> None: ...
    def count_hit(self, bucket: str, expires_at: str) -> int:
        """Add one to the counter `bucket` (created to live until `expires_at`) and return its
        new value, atomically: rate limits."""
        ...

    # live-feed connections (API Gateway WebSockets; bench_core.live.apigw)
    def add_connection(self, connection: LiveConnection) -> None: ...
    def remove_connection(self, connection_id: str) -> None: ...
    def live_connections(self, login: str, now: str) -> list[LiveConnection]:
        """The unexpired connections watching any feed of `login` (an agent or the owner's),
        in connection id order."""
        ...


class EvalStore(Protocol):
    """Eval results and judge spend (rules in bench_core.domain.eval_records), failure clusters
    (bench_core.clustering)."""

    def record_eval(self, ref: AgentRef, task_id: str, result: EvalResult) -> bool:
        """Store `result` on the finished task and apply its `eval_delta` to the agent (and
        today's judge spend), atomically; False (nothing changed) if the task is unknown or
        unfinished or `result` may not replace the stored one."""
        ...
    def record_evals(self, ref: AgentRef, results: Mapping[str, EvalResult], *,
                     read: Mapping[str, TaskState] | None = None,
                     queued: Sequence[str] = ()) -> set[str]:
        """Record each result (by task id) as `record_eval` does, in as few atomic writes as the
        store can: each stands alone, one refused changes none of the others. `read` holds
        tasks as read when their results were decided; a store may write against them
        instead of reading again, only while each is still as read (compare-and-set).
        `queued` are runs queued together (`mark_evals_pending`), pending no more. The task
        ids recorded."""
        ...
    def mark_evals_pending(self, ref: AgentRef, task_ids: list[str], when: str) -> None:
        """Remember that these finished tasks, queued together, await a result, before their
        evals start, so a crash in between cannot lose them (a no-op where pending tasks can
        be queried); marking the same runs again keeps the first `when`."""
        ...
    def pending_evals(self, since: str, before: str, limit: int
                      ) -> list[tuple[AgentRef, list[str]]]:
        """Finished runs without a result, ended (or marked pending) in [since, before), oldest
        first, each agent's in the groups they were queued in (at most `limit` runs, whole
        groups)."""
        ...
    def judge_spend(self, ref: AgentRef, day: str) -> float: ...

    # session verdicts (`evals/session_judge.py`)
    def idle_sessions(self, before: str, limit: int) -> list[IdleSession]:
        """Sessions of every agent whose last run ended before `before` and that no verdict
        covers since (`sessions.judge_due`), oldest first, at most `limit`, in one bounded
        indexed read (SQLite: `agent_sessions_due`; DynamoDB: a Query of each `SESSIONQ#`
        partition of the `tasks` index and one BatchGetItem, never a Scan)."""
        ...
    def record_session_eval(self, ref: AgentRef, session_id: str, result: EvalResult,
                            judged_through: str) -> bool:
        """Store `result` as the session's verdict covering its runs up to `judged_through`
        (its `last_at` as judged; a run ended later keeps it due) and add its cost to the
        day's judge spend; False if the session is unknown."""
        ...

    # failure clusters
    def cluster_candidates(self, ref: AgentRef, limit: int) -> list[TaskState]:
        """The agent's failed and low-scored runs (`domain.eval_records.LOW_SCORE`), newest first."""
        ...
    def save_insights(self, ref: AgentRef, insights: dict[str, Any]) -> None:
        """Store the agent's insights; the agent stops being due unless a failure was recorded
        after `insights["computed_at"]`."""
        ...
    def get_insights(self, ref: AgentRef) -> dict[str, Any] | None: ...
    def clusters_due(self, limit: int) -> list[AgentRef]:
        """Agents with failed or low-scored runs recorded since their last insights."""
        ...


class LeaderboardStore(Protocol):
    """The leaderboard: rankings kept on every write (bench_core.domain.ranking), read in
    order."""

    def leaderboard(self, sort: str, *, query: str | None = None, offset: int = 0,
                    limit: int = 25) -> list[Agent]:
        """Listed agents that qualify for `sort`, best first (ties: more runs, then login and
        slug), whose search text contains `query` (case-insensitive); one index range read."""
        ...


class ReuseStore(Protocol):
    """Authorized reuse (bench_core.reuse): capability cards, invocation grants, quota and
    callers' usage."""

    def put_capability(self, ref: AgentRef, card: dict[str, Any], when: str, secret: str
                       ) -> bool:
        """Publish or replace the agent's card. `secret` becomes its invocation secret only if
        it has none yet; True when it did (first publish: the owner sees it this once)."""
        ...
    def get_capability(self, ref: AgentRef) -> PublishedCapability | None: ...
    def rotate_invocation_secret(self, ref: AgentRef, secret: str, when: str) -> bool:
        """Replace the invocation secret of a published card; False if there is none."""
        ...
    def put_invocation_grant(self, grant: InvocationGrant) -> None:
        """Create or replace the grant of `grant.caller` (its counters carry on)."""
        ...
    def get_invocation_grant(self, ref: AgentRef, caller: str) -> InvocationGrant | None: ...
    def invocation_grants(self, ref: AgentRef) -> list[InvocationGrant]:
        """The agent's grants, by caller."""
        ...
    def delete_invocation_grant(self, ref: AgentRef, caller: str) -> bool: ...
    def take_invocation_quota(self, ref: AgentRef, caller: str,
                              windows: list[QuotaWindow]) -> QuotaWindow | None:
        """Count one call of `caller` in every window unless one is full, atomically: None
        when counted, else the first full window (and nothing counted)."""
        ...
    def record_usage(self, usage: UsageRecord) -> None:
        """Kept until `usage.expires_at` (None: for ever)."""
        ...
    def list_usage(self, login: str, limit: int, caller_agent: str | None = None
                   ) -> list[UsageRecord]:
        """The login's calls through Bench, newest first; none past its expiry. With
        `caller_agent`, only those its agent's keys made (`UsageRecord.caller_agent`)."""
        ...


class BenchmarkStore(Protocol):
    """Benchmarks (bench_core.benchmarks): the suite registry, runs with their attempts,
    rankings."""

    def register_suite(self, suite: str, content_hash: str, when: str) -> str:
        """Register `suite` (`<name>-v<N>`) with `content_hash` unless it is registered, and
        return the registered hash, atomically: a published suite never changes."""
        ...
    def registered_suites(self) -> dict[str, str]:
        """Every registered suite's content hash, by suite id."""
        ...
    def save_benchmark_run(self, run: RunRecord) -> bool:
        """Store the run with its attempts; if it is `done`, list it among the agent's runs
        and make it the agent's ranked run of the suite unless a later one is (a `pending`
        run is neither until `update_benchmark_run` says done). False (nothing changed) if a
        run with its id exists."""
        ...
    def save_benchmark_grades(self, run: RunRecord, positions: list[int]) -> None:
        """Progress of a run being graded: the attempts at `positions` as `run` has them now,
        and the run's status and counts; still unlisted."""
        ...
    def update_benchmark_run(self, run: RunRecord) -> None:
        """The run's status, summary and judge as `run` has them (attempts unchanged); once
        `done`, listed and ranked as `save_benchmark_run` does."""
        ...
    def get_benchmark_run(self, run_id: str) -> RunRecord | None: ...
    def benchmark_runs_of(self, ref: AgentRef, limit: int) -> list[RunRecord]:
        """The agent's runs, newest first, without their attempts."""
        ...
    def benchmark_ranking(self, suite: str, *, limit: int, after: str | None = None
                          ) -> list[RunRecord]:
        """Each agent's latest run of `suite`, best first (`RunRecord.rank_key`), after the
        rank key `after`; without attempts, private agents included (callers filter)."""
        ...


class RetentionStore(Protocol):
    """What is kept how long: raw events for the configured days, a temporary agent (/try)
    with everything it holds until its `expires_at` (sqlite/retention.py,
    dynamodb/retention.py)."""

    def purge_expired(self, now: str) -> int:
        """Delete what has expired by `now`; the rows deleted (0 where the database expires
        items itself: DynamoDB's TTL)."""
        ...


class FeedbackStore(Protocol):
    """Feedback from people on runs (`bench_core.domain.feedback`): each kept under its run by
    the id its sender chose, read a run at a time (DynamoDB: one Query of the run's task
    partition)."""

    def add_feedback(self, ref: AgentRef, feedback: Feedback, *,
                     expires_at: str | None = None) -> Feedback | None:
        """Keep `feedback` unless the run has one with its id: then that one, unchanged (a
        resend keeps one); None when kept now. `expires_at`: a temporary agent's, which its
        feedback shares."""
        ...

    def run_feedback(self, ref: AgentRef, run_id: str, limit: int) -> list[Feedback]:
        """The run's first `limit` feedback by id, oldest first (`in_shown_order`)."""
        ...

    def set_agreement(self, ref: AgentRef, run_id: str, cell: Cell | None, *,
                      expires_at: str | None = None) -> None:
        """Count the run in `cell` of the agent's agreement table (`domain.agreement`), out of
        the cell it was counted in before if another, atomically: a run counts once, where its
        verdicts are now. None: people gave it a verdict, the judge none yet (marked for
        `run_marks`, counted nowhere; a run already in a cell stays there). `expires_at`: a
        temporary agent's."""
        ...

    def run_marks(self, ref: AgentRef, run_ids: Sequence[str]) -> dict[str, Cell | None]:
        """Of `run_ids`, those people gave a verdict on, each with its cell (None: not judged):
        one batch read (what the annotation queue asks of a page of runs)."""
        ...

    def label_set(self, ref: AgentRef) -> list[str] | None:
        """The agent's label set, in the owner's order; None when it has none."""
        ...

    def set_label_set(self, ref: AgentRef, labels: list[str] | None, *,
                      expires_at: str | None = None) -> None:
        """Replace the agent's label set (None or empty: no set, any label goes)."""
        ...

    def has_feedback(self, ref: AgentRef) -> bool:
        """Whether the agent was ever given feedback (perhaps a little early, never late:
        DynamoDB marks its `AGREE` item before it keeps the first, and reads it eventually
        consistent), so that judging runs of an agent without any reads no run's feedback: one
        read per eval of a batch's runs."""
        ...

    def agreement_tables(self, refs: Sequence[AgentRef]) -> dict[AgentRef, AgreementTable]:
        """Each agent's agreement table (empty for one without labelled runs), from counters
        kept by `set_agreement`: no scan (DynamoDB: one item per agent, read in a batch)."""
        ...


class AlertStore(Protocol):
    """Alerts from the regression monitors (`bench_core.domain.alerts`): at most one unresolved
    alert per agent and monitor key, whatever runs the monitors at once, and each webhook
    delivery attempt."""

    def raise_alert(self, ref: AgentRef, alert: Alert) -> tuple[Alert, bool]:
        """Open `alert` unless the agent has an unresolved alert of its key: then that one with
        `alert`'s numbers (`domain.alerts.updated`). The alert kept, and whether it opened
        now."""
        ...

    def acknowledge_alert(self, ref: AgentRef, key: str, at: str) -> Alert | None:
        """The open alert of `key`, acknowledged (it stays unresolved); None if there is no
        unresolved alert of that key."""
        ...

    def resolve_alert(self, ref: AgentRef, key: str, at: str, by: str) -> Alert | None:
        """The unresolved alert of `key`, resolved (`by`: "recovery", "owner" or
        "superseded"); None if there is none."""
        ...

    def claim_look(self, ref: AgentRef, hour: str) -> bool:
        """Whether the monitors may look at the agent in `hour` (`YYYY-MM-DDTHH`): True for
        the first to ask in that hour, False for every later ask (and for an hour before the
        last claimed)."""
        ...

    def agent_alerts(self, ref: AgentRef, *, unresolved: bool = False,
                     limit: int = 50) -> list[Alert]:
        """The agent's alerts (only the unresolved ones if asked), newest opened first; the
        unresolved always before the resolved."""
        ...

    def record_delivery(self, ref: AgentRef, delivery: Delivery) -> None:
        """Keep one delivery attempt (one per alert, event, target and attempt number; a
        repeat replaces it)."""
        ...

    def alert_deliveries(self, ref: AgentRef, alert_id: str, limit: int = 100) -> list[Delivery]:
        """An alert's delivery attempts, oldest first."""
        ...

    def set_alert_settings(self, ref: AgentRef, settings: AlertSettings) -> None:
        """Where the agent's alerts go and what its monitors watch for (replacing any)."""
        ...

    def alert_settings(self, ref: AgentRef) -> AlertSettings:
        """The agent's alert settings; the defaults (every metric, nowhere but the dashboard)
        if its owner set none."""
        ...


class TimeSeriesStore(Protocol):
    """An agent's counters over time (`bench_core.domain.timeseries`): kept by ingest and evals
    in the writes that already count runs and scores (so exactly once), read a scope and grain
    at a time by period (SQLite: one indexed range; DynamoDB: one Query of the agent's key)."""

    def add_buckets(self, ref: AgentRef, buckets: Mapping[BucketKey, Bucket]) -> None:
        """Add `buckets` to what is kept, outside ingest: counters written whole (the read
        benchmark seeds a year this way)."""
        ...

    def read_buckets(self, ref: AgentRef, scope: str, grain: str, first: str, last: str
                     ) -> list[tuple[str, Bucket]]:
        """The kept periods of `scope` and `grain` from `first` to `last` (periods as
        `timeseries.period_of` writes them, both included), in order; none kept, none listed."""
        ...

    def active_agents(self, first: str, last: str, *, after: AgentRef | None = None,
                      limit: int = 100) -> list[AgentRef]:
        """The agents, listed or not, with anything counted in an hour from `first` to `last`
        (hours as `timeseries.period_of` writes them, both included: a run ended, a model
        call priced), in (login, slug) order after `after`, at most `limit`: a page of the
        hourly round's agents (`alerts/watch.py`), read without touching any agent's history
        (SQLite: one indexed range; DynamoDB: a Query of a few sparse index partitions an
        hour)."""
        ...


class ClusterStore(Protocol):
    """Failure clusters over time (`bench_core.domain.cluster_series`): the last
    recomputation's members, which the next one matches its clusters against, and each
    cluster's failures per hour and day, added as clustering first assigns each run."""

    def cluster_state(self, ref: AgentRef) -> ClusterState | None:
        """The members of the agent's clusters as last kept; None before its first."""
        ...

    def keep_clusters(self, ref: AgentRef, state: ClusterState,
                      counts: Mapping[ClusterKey, int]) -> bool:
        """Keep `state` and add `counts`, only over the state it follows (the kept one's
        generation is `state.generation - 1`, none for the first): a recomputation run twice,
        or two at once, counts its runs once. Whether it was kept."""
        ...

    def read_clusters(self, ref: AgentRef, grain: str, first: str, last: str
                      ) -> list[tuple[str, dict[str, int]]]:
        """Each kept period of `grain` from `first` to `last` (both included), in order, with
        its failures by cluster id; none kept, none listed."""
        ...


@dataclass(frozen=True)
class Store:
    """Everything Bench keeps, one concern per attribute. An adapter makes one object per
    concern over what they share and assembles them here (a subclass adds what it shares,
    and `close` lets go of it), with the clock it was opened with: what "now" is for its
    concerns, and for the use cases it is handed to (`WithClock`)."""

    ingest: IngestStore
    runs: RunStore
    agents: AgentStore
    accounts: AccountStore
    evals: EvalStore
    leaderboard: LeaderboardStore
    reuse: ReuseStore
    benchmarks: BenchmarkStore
    retention: RetentionStore
    feedback: FeedbackStore
    alerts: AlertStore
    timeseries: TimeSeriesStore
    clusters: ClusterStore
    clock: Clock

    def close(self) -> None:
        """Let go of what the adapter holds open (connections); nothing here."""


SETTABLE = frozenset({"visibility", "hide_inputs", "hide_outputs", "display_name",
                      "judge_daily_budget_usd", "judge_sample_rate"})
"""Agent fields an owner may change; every adapter's `update_agent` refuses the rest."""


def one_by_one(ingest: IngestStore, writes: Sequence[IngestWrite]
               ) -> list[IngestOutcome | Exception]:
    """`IngestStore.ingest_many` for a store that commits each write on its own (DynamoDB's
    transactions, the in-memory store's lock): each written in turn, a failure its result."""
    results: list[IngestOutcome | Exception] = []
    for write in writes:
        try:
            results.append(ingest.ingest(write.login, write.meta, write.events, write.dropped))
        except Exception as exc:
            results.append(exc)
    return results


def encode_cursor(*parts: str) -> str:
    return base64.urlsafe_b64encode(json.dumps(parts).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> list[str]:
    """The parts of a cursor made by `encode_cursor`; ValueError for anything else."""
    try:
        parts = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, TypeError) as exc:
        raise ValueError("malformed cursor") from exc
    if not isinstance(parts, list) or not all(isinstance(p, str) for p in parts):
        raise ValueError("malformed cursor")
    return parts


def sorted_page(where: RunFilter, runs: list[TaskState], cursor: str | None, limit: int
                ) -> RunsPage:
    """The page of `runs` (kept by `where` already) after `cursor`, in `where`'s order, for
    a store that sorts what it read (`RunFilter.page`); ValueError for a malformed cursor."""
    page, after = where.page(runs, decode_cursor(cursor) if cursor else None, limit)
    return RunsPage(page, encode_cursor(*after) if after else None)

