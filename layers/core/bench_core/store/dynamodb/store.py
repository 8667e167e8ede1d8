"""The DynamoDB adapter: one table (`table.py`), the same meaning as `store/sqlite/`.

Each concern keeps its items and writes in a file of its own, all on one shared `Table`
(`client.py`); this module only assembles them into the `Store`:

- `ingest.py`       batches; the events, tasks and day counters they make, and their reads
- `agents.py`       agents and their settings
- `accounts.py`     API keys, users, grants, rate-limit counters, live connections
- `evals.py`        eval results, judge spend, failure clusters and their queues
- `leaderboard.py`  rank keys on the agent item and the ranking queries
- `reuse.py`        capability cards, invocation grants, quota, usage
- `benchmarks.py`   the suite registry, runs and their rankings
- `retention.py`    what expires when (DynamoDB's TTL)
- `runs.py`         every task's run (`runs` index), a run in one Query, the runs list

`codec/` lays out the items several concerns share (keys, numbers, JSON values, update
expressions; the agent, task and page items).
Reads use the base table for one item or one agent's days (strongly consistent) and the GSIs
for listings (eventually consistent, like every GSI). Nothing scans.
"""

from __future__ import annotations

from typing import Any

from ...domain.ranking import Qualification
from ...runtime.config import Limits
from .accounts import DynamoAccounts
from .agents import DynamoAgents
from .benchmarks import DynamoBenchmarks
from .client import Table
from .evals import DynamoEvals
from .ingest import DynamoIngest
from .leaderboard import DynamoLeaderboard
from .retention import DynamoRetention
from .reuse import DynamoReuse
from .runs import DynamoRuns


class DynamoStore:
    """Every concern on one table; each `Store` method is its concern's own."""

    def __init__(self, table_name: str, *, client: Any = None,
                 event_retention_days: int = Limits.event_retention_days,
                 max_agents_per_account: int = Limits.max_agents_per_account,
                 qualification: Qualification = Qualification()) -> None:
        """`client` is a boto3 DynamoDB (low-level) client; by default one is made on first use,
        for the region in the environment. Events expire `event_retention_days` after their
        time (0: never; `retention.py`); an account has at most `max_agents_per_account`
        agents; an agent ranks once it meets `qualification`."""
        self.table = table = Table(table_name, client)
        ranks = DynamoLeaderboard(table, qualification)
        self._ingest = ingest = DynamoIngest(table, ranks, event_retention_days,
                                             max_agents_per_account)
        agents = DynamoAgents(table, ranks, max_agents_per_account)
        accounts = DynamoAccounts(table)
        evals = DynamoEvals(table, ranks)
        reuse = DynamoReuse(table)
        benchmarks = DynamoBenchmarks(table)
        retention = DynamoRetention()
        runs = DynamoRuns(table)

        # keys and users, grants, counters, live connections
        self.create_key = accounts.create_key
        self.key_by_hash = accounts.key_by_hash
        self.list_keys = accounts.list_keys
        self.revoke_key = accounts.revoke_key
        self.touch_key = accounts.touch_key
        self.claim_login = accounts.claim_login
        self.put_grant = accounts.put_grant
        self.get_grant = accounts.get_grant
        self.update_grant = accounts.update_grant
        self.delete_grant = accounts.delete_grant
        self.count_hit = accounts.count_hit
        self.add_connection = accounts.add_connection
        self.remove_connection = accounts.remove_connection
        self.live_connections = accounts.live_connections
        # agents
        self.get_agent = agents.get_agent
        self.list_agents = agents.list_agents
        self.update_agent = agents.update_agent
        self.create_agent = agents.create_agent
        # ingest and tasks
        self.ingest = ingest.ingest
        self.get_task = ingest.get_task
        self.list_tasks = ingest.list_tasks
        self.subtask_ids = ingest.subtask_ids
        self.task_events = ingest.task_events
        self.recent_events = ingest.recent_events
        self.daily = ingest.daily
        # the leaderboard
        self.leaderboard = ranks.leaderboard
        # evaluations and failure clusters
        self.record_eval = evals.record_eval
        self.mark_evals_pending = evals.mark_evals_pending
        self.pending_evals = evals.pending_evals
        self.judge_spend = evals.judge_spend
        self.cluster_candidates = evals.cluster_candidates
        self.save_insights = evals.save_insights
        self.get_insights = evals.get_insights
        self.clusters_due = evals.clusters_due
        # authorized reuse
        self.put_capability = reuse.put_capability
        self.get_capability = reuse.get_capability
        self.rotate_invocation_secret = reuse.rotate_invocation_secret
        self.put_invocation_grant = reuse.put_invocation_grant
        self.get_invocation_grant = reuse.get_invocation_grant
        self.invocation_grants = reuse.invocation_grants
        self.delete_invocation_grant = reuse.delete_invocation_grant
        self.take_invocation_quota = reuse.take_invocation_quota
        self.record_usage = reuse.record_usage
        self.list_usage = reuse.list_usage
        # benchmarks
        self.register_suite = benchmarks.register_suite
        self.registered_suites = benchmarks.registered_suites
        self.save_benchmark_run = benchmarks.save_benchmark_run
        self.save_benchmark_grades = benchmarks.save_benchmark_grades
        self.update_benchmark_run = benchmarks.update_benchmark_run
        self.get_benchmark_run = benchmarks.get_benchmark_run
        self.benchmark_runs_of = benchmarks.benchmark_runs_of
        self.benchmark_ranking = benchmarks.benchmark_ranking
        # retention
        self.purge_expired = retention.purge_expired
        # runs
        self.run_head = runs.run_head
        self.run_spans = runs.run_spans
        self.run_counts = runs.run_counts
        self.list_runs = runs.list_runs

    @property
    def table_name(self) -> str:
        return self.table.name

    @property
    def client(self) -> Any:
        return self.table.client

    @property
    def event_retention_days(self) -> int:
        return self._ingest.retention_days

    @event_retention_days.setter
    def event_retention_days(self, days: int) -> None:
        self._ingest.retention_days = days

    def close(self) -> None:
        self.table.close()
