"""An agent's counters over time in memory (`domain.timeseries`): by agent, then bucket key,
added to under the lock of the batch or eval that counts them, as SQLite's rows."""

from __future__ import annotations

from collections.abc import Mapping

from ...domain.models import AgentRef
from ...domain.timeseries import ALL, HOUR, Bucket, BucketKey
from .state import Concern, Tables


def add_series(tables: Tables, ref: AgentRef, buckets: Mapping[BucketKey, Bucket]) -> None:
    kept = tables.series.setdefault(ref, {})
    for key, added in buckets.items():
        kept.setdefault(key, Bucket()).add(added)


class MemoryTimeSeries(Concern):
    def add_buckets(self, ref: AgentRef, buckets: Mapping[BucketKey, Bucket]) -> None:
        with self.memory.locked() as tables:
            if ref in tables.agents:
                add_series(tables, ref, buckets)

    def read_buckets(self, ref: AgentRef, scope: str, grain: str, first: str, last: str
                     ) -> list[tuple[str, Bucket]]:
        with self.memory.locked() as tables:
            kept = tables.series.get(ref, {})
            out = []
            for key in sorted(k for k in kept if k.scope == scope and k.grain == grain
                              and first <= k.period <= last):
                copy = Bucket()
                copy.add(kept[key])
                out.append((key.period, copy))
        return out

    def active_agents(self, first: str, last: str, *, after: AgentRef | None = None,
                      limit: int = 100) -> list[AgentRef]:
        with self.memory.locked() as tables:
            active = [ref for ref, kept in tables.series.items() if any(
                k.scope == ALL and k.grain == HOUR and first <= k.period <= last for k in kept)]
        start = (after.login, after.slug) if after is not None else ("", "")
        return sorted((ref for ref in active if (ref.login, ref.slug) > start),
                      key=lambda ref: (ref.login, ref.slug))[:limit]
