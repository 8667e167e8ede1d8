"""The in-memory adapter: every concern of the Store port over plain Python structures and one
lock (`state.Memory`), with SQLite's semantics (idempotent event ids, compare-and-set, order
and paging, limits, retention). For tests and throwaway servers (`BENCH_STORE=memory`): it
pays neither for a file nor for moto, and keeps nothing past the process."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...clock import SYSTEM_CLOCK, Clock
from ...domain.ranking import Qualification
from ...ports.store import Store
from ...settings import Limits
from ..rules import Rules
from .accounts import MemoryAccounts
from .agents import MemoryAgents
from .alerts import MemoryAlerts
from .benchmarks import MemoryBenchmarks
from .clusters import MemoryClusters
from .evals import MemoryEvals
from .feedback import MemoryFeedback
from .ingest import MemoryIngest
from .leaderboard import MemoryLeaderboard
from .retention import MemoryRetention
from .reuse import MemoryReuse
from .runs import MemoryRuns
from .state import Concern, Memory
from .timeseries import MemoryTimeSeries

CONCERNS: dict[str, type[Concern]] = {
    "ingest": MemoryIngest, "runs": MemoryRuns, "agents": MemoryAgents,
    "accounts": MemoryAccounts, "evals": MemoryEvals, "leaderboard": MemoryLeaderboard,
    "reuse": MemoryReuse, "benchmarks": MemoryBenchmarks, "retention": MemoryRetention,
    "feedback": MemoryFeedback, "alerts": MemoryAlerts, "timeseries": MemoryTimeSeries,
    "clusters": MemoryClusters,
}
"""Each field of `Store` and the class serving it (the contract suite checks each against its
protocol: `tests/contract/store/test_concerns.py`)."""


@dataclass(frozen=True)
class MemoryStore(Store):
    memory: Memory

    @classmethod
    def open(cls, memory: Memory | None = None, *,
             event_retention_days: int = Limits.event_retention_days,
             max_agents_per_account: int = Limits.max_agents_per_account,
             qualification: Qualification = Qualification(),
             clock: Clock = SYSTEM_CLOCK) -> MemoryStore:
        """A store over `memory` (a new, empty one by default), by the rules `SqliteStore.open`
        takes."""
        memory = memory or Memory()
        rules = Rules(event_retention_days, max_agents_per_account, qualification, clock)
        concerns: dict[str, Any] = {name: kind(memory, rules) for name, kind in CONCERNS.items()}
        return cls(memory=memory, clock=clock, **concerns)
