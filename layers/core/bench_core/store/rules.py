"""What the store's settings ask of every adapter that keeps its own rules (SQLite's concerns,
the in-memory store's): DynamoDB stamps the same rules on its items instead."""

from __future__ import annotations

from dataclasses import dataclass

from ..clock import SYSTEM_CLOCK, Clock
from ..domain.models import iso
from ..domain.ranking import Qualification
from ..settings import Limits


@dataclass(frozen=True)
class Rules:
    """What the store's settings ask of its concerns."""

    event_retention_days: int = Limits.event_retention_days
    """Raw events go this long after their time, at `purge_expired` (0: never)."""
    max_agents_per_account: int = Limits.max_agents_per_account
    qualification: Qualification = Qualification()
    """When an agent first ranks."""
    clock: Clock = SYSTEM_CLOCK
    """What "now" is for expiries and ranks."""

    def now(self) -> str:
        return iso(self.clock.now())
