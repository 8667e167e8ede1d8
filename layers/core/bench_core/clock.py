"""The wall clock, behind one seam: what "now" is for every date Bench stamps, compares or
windows (expiries, retention, ranking, sweeps). The composition root hands one `Clock` to the
use cases (`Services.clock`) and to the stores it opens; a test hands a `FixedClock` instead.

Durations are another matter: they are measured with `time.monotonic()`, which no clock
setting moves.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

AHEAD_ENV = "BENCH_CLOCK_AHEAD_DAYS"
"""Run as if this many days later (the system clock only): how the test suite proves no test
depends on today's date (`BENCH_CLOCK_AHEAD_DAYS=365 pytest`). Unset in any deployment."""


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware in UTC."""
        ...


@dataclass(frozen=True)
class SystemClock:
    """The machine's clock, `ahead` of it by a fixed span (none but in the tests' year-ahead run)."""

    ahead: timedelta = timedelta(0)

    def now(self) -> datetime:
        return datetime.now(UTC) + self.ahead

    @classmethod
    def from_env(cls) -> SystemClock:
        return cls(timedelta(days=float(os.environ.get(AHEAD_ENV) or 0)))


class FixedClock:
    """A clock that stands still at `at` until it is set or advanced: for tests of what a date
    decides (an expiry, a window, a purge)."""

    def __init__(self, at: datetime) -> None:
        self.set(at)

    def now(self) -> datetime:
        return self._at

    def set(self, at: datetime) -> None:
        """Stand at `at` (timezone-aware; told in UTC)."""
        if at.utcoffset() is None:
            raise ValueError(f"a clock tells UTC: {at!r} names no timezone")
        self._at = at.astimezone(UTC)

    def advance(self, by: timedelta) -> None:
        self._at += by


SYSTEM_CLOCK: Clock = SystemClock.from_env()
"""The default of whatever is built without a clock handed to it: the one system clock."""
