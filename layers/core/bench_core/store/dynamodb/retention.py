"""How long DynamoDB keeps what (SQLite's side is `store/sqlite/retention.py`): the table's TTL
attribute `expires_at` (epoch seconds) is set as items are written, and DynamoDB deletes them
for free, without a scan or a scheduled job.

- Every raw event of no task expires `event_retention_days` after its time
  (`codec.event_expiry`), as in SQLite. A task's events are the only copy of its content
  (`content.py`), which stays with the task as it does in SQLite: their pages are kept, and
  the reads of events show none older than the retention (`ingest.DynamoIngest`), as if they
  had gone. Unlike SQLite's purge, neither spares an agent's newest 1,000 events: an agent
  silent for longer than the retention shows no events (its tasks, counters and evals stay).
  Sparing them would cost extra reads and writes on every batch to find the events that fall
  out of the window, for the sake of agents nobody sends to any more.
- Every item of a temporary agent (the /try sandbox's: agent, user, tasks, events, days, judge
  spend, low-score and insights items, cluster marker) expires with it (`codec.expiring`);
  `get_agent` hides it from its expiry on, since TTL deletion can lag by a day or two.
"""

from __future__ import annotations


class DynamoRetention:
    """Retention on DynamoDB: nothing to run."""

    def purge_expired(self, now: str) -> int:
        """Nothing to do: DynamoDB's TTL deletes what has expired."""
        return 0
