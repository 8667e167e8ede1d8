"""Failure clusters over time in memory (`domain.cluster_series`): each agent's last state and
its counts by cluster, grain and period, kept together under the lock, as SQLite's rows."""

from __future__ import annotations

from collections.abc import Mapping

from ...domain.cluster_series import ClusterKey, ClusterState
from ...domain.models import AgentRef
from .state import Concern


class MemoryClusters(Concern):
    def cluster_state(self, ref: AgentRef) -> ClusterState | None:
        with self.memory.locked() as tables:
            return tables.cluster_states.get(ref)

    def keep_clusters(self, ref: AgentRef, state: ClusterState,
                      counts: Mapping[ClusterKey, int]) -> bool:
        with self.memory.locked() as tables:
            kept = tables.cluster_states.get(ref)
            if ref not in tables.agents or (kept.generation if kept else 0) != state.generation - 1:
                return False
            tables.cluster_states[ref] = state
            series = tables.cluster_series.setdefault(ref, {})
            for key, n in counts.items():
                series[key] = series.get(key, 0) + n
            return True

    def read_clusters(self, ref: AgentRef, grain: str, first: str, last: str
                      ) -> list[tuple[str, dict[str, int]]]:
        with self.memory.locked() as tables:
            out: dict[str, dict[str, int]] = {}
            for key, n in sorted(tables.cluster_series.get(ref, {}).items(),
                                 key=lambda kv: (kv[0].period, kv[0].cluster)):
                if key.grain == grain and first <= key.period <= last:
                    out.setdefault(key.period, {})[key.cluster] = n
            return list(out.items())
