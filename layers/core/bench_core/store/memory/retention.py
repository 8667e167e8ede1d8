"""How long the in-memory store keeps what: the same rules as SQLite's
(`store/sqlite/retention.py`), applied by `purge_expired`.

- Raw events older than the retention (by their time), except each agent's newest
  `spared_events`.
- A temporary agent (the /try sandbox's) past its `expires_at`, with all it holds, its expired
  keys and, once it has no agent left, its user.
- Usage records and quota counters past their expiry.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from ...domain.models import AgentRef, iso
from ...settings import Limits
from .state import Concern, Tables


class MemoryRetention(Concern):
    """Events older than the rules' `event_retention_days` go (0: never), except each agent's
    newest `spared_events`."""

    spared_events: int = Limits.recent_events

    def purge_expired(self, now: str) -> int:
        with self.memory.locked() as tables:
            return (self._purge_temporary_agents(tables, now) + self._purge_old_events(tables, now)
                    + self._purge_expiring_rows(tables, now))

    @staticmethod
    def _purge_expiring_rows(tables: Tables, now: str) -> int:
        usage = [k for k, u in tables.usage.items()
                 if u.expires_at is not None and u.expires_at <= now]
        quota = [k for k, c in tables.quota.items() if c.expires_at <= now]
        for key in usage:
            del tables.usage[key]
        for counter in quota:
            del tables.quota[counter]
        return len(usage) + len(quota)

    def _purge_temporary_agents(self, tables: Tables, now: str) -> int:
        expired = [ref for ref, row in tables.agents.items()
                   if row.agent.expires_at is not None and row.agent.expires_at <= now]
        deleted = 0
        for ref in expired:
            deleted += _delete_agent(tables, ref)
            keys = [h for h, k in tables.keys.items() if k.login == ref.login
                    and k.expires_at is not None and k.expires_at <= now]
            for key_hash in keys:
                del tables.keys[key_hash]
            deleted += len(keys)
            if not any(other.login == ref.login for other in tables.agents):
                deleted += tables.users.pop(ref.login, None) is not None
        return deleted

    def _purge_old_events(self, tables: Tables, now: str) -> int:
        if self.rules.event_retention_days <= 0:
            return 0
        cutoff = iso(datetime.fromisoformat(now.replace("Z", "+00:00"))
                     - timedelta(days=self.rules.event_retention_days))
        deleted = 0
        for events in tables.events.values():
            ordered = sorted(events.items(), key=lambda item: (item[1].ts, item[1].seq))
            if not ordered or ordered[0][1].ts >= cutoff or len(ordered) < self.spared_events:
                continue
            kept = ordered[len(ordered) - self.spared_events][1]
            for event_id, event in ordered:
                if event.ts < cutoff and (event.ts, event.seq) < (kept.ts, kept.seq):
                    del events[event_id]
                    deleted += 1
        return deleted


def _delete_agent(tables: Tables, ref: AgentRef) -> int:
    """The agent and every row that belongs to it; the rows deleted."""
    deleted = 1 + len(tables.events.pop(ref, {})) + len(tables.tasks.pop(ref, {}))
    deleted += len(tables.days.pop(ref, {})) + len(tables.judge_days.pop(ref, {}))
    deleted += len(tables.versions.pop(ref, {})) + len(tables.series.pop(ref, {}))
    deleted += len(tables.sessions.pop(ref, {}))
    deleted += len(tables.cluster_series.pop(ref, {}))
    deleted += (tables.cluster_states.pop(ref, None) is not None)
    deleted += (tables.insights.pop(ref, None) is not None)
    deleted += (tables.capabilities.pop(ref, None) is not None)
    deleted += sum(len(run) for run in tables.feedback.pop(ref, {}).values())
    deleted += len(tables.alerts.pop(ref, {}))
    deleted += (tables.alert_settings.pop(ref, None) is not None)
    deleted += (tables.alert_looks.pop(ref, None) is not None)
    deleted += sum(len(tries) for tries in tables.deliveries.pop(ref, {}).values())
    deleted += len(tables.agreement.pop(ref, {}))
    deleted += (tables.label_sets.pop(ref, None) is not None)
    del tables.agents[ref]
    grants = [key for key in tables.invocation_grants if key[0] == ref]
    for grant in grants:
        del tables.invocation_grants[grant]
    quota = [key for key in tables.quota if key[0] == ref]
    for counter in quota:
        del tables.quota[counter]
    deleted += len(grants) + len(quota)
    ranks = [key for key in tables.benchmark_ranks if key[1] == ref]
    for rank in ranks:
        del tables.benchmark_ranks[rank]
    runs = [run_id for run_id, run in tables.benchmark_runs.items()
            if (run.login, run.slug) == (ref.login, ref.slug)]
    for run_id in runs:
        deleted += 1 + len(tables.benchmark_runs.pop(run_id).attempts)
    return deleted + len(ranks)
