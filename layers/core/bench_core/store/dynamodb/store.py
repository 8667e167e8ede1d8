"""The DynamoDB adapter: one table (`table.py`), the same meaning as `store/sqlite/`.

Each concern keeps its items and writes in a class and file of its own, all on one shared
`Table` (`client.py`); this module only assembles them into a `Store`:

- `ingest.py`       batches; the events, tasks and day counters they make, and their reads
- `agents.py`       agents and their settings
- `accounts.py`     API keys, users, grants, rate-limit counters, live connections
- `evals.py`        eval results, judge spend, failure clusters and their queues
- `leaderboard.py`  rank keys on the agent item and the ranking queries
- `reuse.py`        capability cards, invocation grants, quota, usage
- `benchmarks.py`   the suite registry, runs and their rankings
- `retention.py`    what expires when (DynamoDB's TTL)
- `runs.py`         every task's run (`runs` index), a run in one Query, the runs list
- `feedback.py`     feedback from people, beside the run it is about
- `alerts.py`       alerts from the regression monitors and their deliveries
- `timeseries.py`   an agent's counters over time, ADDed to by ingest and evals
- `clusters.py`     failure clusters' last members and their failures per hour and day

`content.py` folds a task's content from its events where a read shows it (ingest, runs and
evals share one, and the pages it keeps). `codec/` lays out the items several concerns share
(keys, numbers, JSON values, update expressions; the agent, task and page items).
Reads use the base table for one item or one agent's days (strongly consistent) and the GSIs
for listings (eventually consistent, like every GSI). Nothing scans.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...clock import SYSTEM_CLOCK, Clock
from ...domain.ranking import Qualification
from ...ports.store import Store
from ...settings import Limits
from .accounts import DynamoAccounts
from .agents import DynamoAgents
from .alerts import DynamoAlerts
from .benchmarks import DynamoBenchmarks
from .client import Table
from .clusters import DynamoClusters
from .content import ContentReader
from .evals import DynamoEvals
from .feedback import DynamoFeedback
from .ingest import DynamoIngest
from .leaderboard import DynamoLeaderboard
from .retention import DynamoRetention
from .reuse import DynamoReuse
from .runs import DynamoRuns
from .timeseries import DynamoTimeSeries


@dataclass(frozen=True)
class DynamoStore(Store):
    """Every concern on one table."""

    table: Table

    @classmethod
    def open(cls, table_name: str, *, client: Any = None,
             event_retention_days: int = Limits.event_retention_days,
             max_agents_per_account: int = Limits.max_agents_per_account,
             qualification: Qualification = Qualification(),
             clock: Clock = SYSTEM_CLOCK) -> DynamoStore:
        """`client` is a boto3 DynamoDB (low-level) client; by default one is made on first use,
        for the region in the environment. Events expire `event_retention_days` after their
        time (0: never; `retention.py`); an account has at most `max_agents_per_account`
        agents; an agent ranks once it meets `qualification`; `clock` says what "now" is."""
        table = Table(table_name, client, clock)
        ranks = DynamoLeaderboard(table, qualification)
        content = ContentReader(table)
        return cls(ingest=DynamoIngest(table, ranks, event_retention_days, max_agents_per_account,
                                       content),
                   runs=DynamoRuns(table, content),
                   agents=DynamoAgents(table, ranks, max_agents_per_account),
                   accounts=DynamoAccounts(table), evals=DynamoEvals(table, ranks, content),
                   leaderboard=ranks, reuse=DynamoReuse(table), benchmarks=DynamoBenchmarks(table),
                   retention=DynamoRetention(), feedback=DynamoFeedback(table),
                   alerts=DynamoAlerts(table), timeseries=DynamoTimeSeries(table),
                   clusters=DynamoClusters(table),
                   clock=clock, table=table)

    @property
    def table_name(self) -> str:
        return self.table.name

    @property
    def client(self) -> Any:
        return self.table.client

    def close(self) -> None:
        self.table.close()
