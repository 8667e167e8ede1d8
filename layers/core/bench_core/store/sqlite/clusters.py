"""Failure clusters over time on SQLite (`domain.cluster_series`): the last recomputation's
members in a row per agent (JSON), and a row per agent, cluster, grain and period counting its
failures, both written in one transaction over the generation they follow, so a chart reads one
range of the primary key."""

from __future__ import annotations

import json
from collections.abc import Mapping

from ...domain.cluster_series import ClusterKey, ClusterState
from ...domain.models import AgentRef
from .agents import find_agent_id
from .connection import Concern

CLUSTERS_SCHEMA = """
    CREATE TABLE cluster_states (
        agent_id INTEGER PRIMARY KEY, generation INTEGER NOT NULL, next_id INTEGER NOT NULL,
        members TEXT NOT NULL);
    CREATE TABLE cluster_series (
        agent_id INTEGER NOT NULL, grain TEXT NOT NULL, period TEXT NOT NULL,
        cluster TEXT NOT NULL, failures INTEGER NOT NULL,
        PRIMARY KEY (agent_id, grain, period, cluster)) WITHOUT ROWID;
"""
"""The migration adding the tables (in `store.MIGRATIONS`); an agent's rows go with it
(`retention.py`)."""


class SqliteClusters(Concern):
    def cluster_state(self, ref: AgentRef) -> ClusterState | None:
        row = self.db.reader().execute(
            "SELECT generation, next_id, members FROM cluster_states WHERE agent_id = "
            "(SELECT id FROM agents WHERE login = ? AND slug = ?)",
            (ref.login, ref.slug)).fetchone()
        if row is None:
            return None
        return ClusterState(json.loads(row["members"]), row["next_id"], row["generation"])

    def keep_clusters(self, ref: AgentRef, state: ClusterState,
                      counts: Mapping[ClusterKey, int]) -> bool:
        with self.db.write() as conn:
            agent_id = find_agent_id(conn, ref)
            if agent_id is None:
                return False
            row = conn.execute("SELECT generation FROM cluster_states WHERE agent_id = ?",
                               (agent_id,)).fetchone()
            if (row[0] if row else 0) != state.generation - 1:
                return False
            conn.execute(
                "INSERT OR REPLACE INTO cluster_states (agent_id, generation, next_id, members) "
                "VALUES (?, ?, ?, ?)", (agent_id, state.generation, state.next_id,
                                         json.dumps(state.members, separators=(",", ":"))))
            conn.executemany(
                "INSERT INTO cluster_series (agent_id, grain, period, cluster, failures) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (agent_id, grain, period, cluster) "
                "DO UPDATE SET failures = failures + excluded.failures",
                [(agent_id, key.grain, key.period, key.cluster, n) for key, n in counts.items()])
            return True

    def read_clusters(self, ref: AgentRef, grain: str, first: str, last: str
                      ) -> list[tuple[str, dict[str, int]]]:
        rows = self.db.reader().execute(
            "SELECT period, cluster, failures FROM cluster_series WHERE agent_id = "
            "(SELECT id FROM agents WHERE login = ? AND slug = ?) AND grain = ? "
            "AND period BETWEEN ? AND ? ORDER BY period, cluster",
            (ref.login, ref.slug, grain, first, last)).fetchall()
        out: dict[str, dict[str, int]] = {}
        for period, cluster, failures in rows:
            out.setdefault(period, {})[cluster] = failures
        return list(out.items())
