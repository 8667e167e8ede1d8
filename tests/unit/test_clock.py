"""The clock seam (bench_core.clock): what "now" is comes from one place, which a test can set,
and nothing else in bench_core reads the wall clock."""

from __future__ import annotations

import ast
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import bench_core
import pytest
from bench_core.clock import AHEAD_ENV, FixedClock, SystemClock
from bench_core.runtime.adapters import Services
from bench_core.settings import Settings

ROOT = Path(bench_core.__file__).parent

WALL_CLOCK_READS = {("datetime", "now"), ("datetime", "utcnow"), ("datetime", "today"),
                    ("date", "today"), ("time", "time"), ("time", "time_ns")}
NOT_DATES = {
    ("reuse/invoke.py", "time.time"): "a call's signature: the agent checks it against its own clock",
    ("alerts/delivery.py", "time.time"): "a webhook's signature: the receiver checks it against its own clock",
    ("store/dynamodb/ingest.py", "time.time_ns"): "arrival sequence numbers: an order, not a date",
    ("workflows/stepfunctions.py", "time.time_ns"): "a unique suffix of execution names",
}
"""Reads of the machine's time that are not Bench's "now", and why."""


def wall_clock_reads(path: Path) -> set[str]:
    """`datetime.now`, `time.time`, ... called in the module at `path`."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) \
                and (node.func.value.id, node.func.attr) in WALL_CLOCK_READS:
            found.add(f"{node.func.value.id}.{node.func.attr}")
    return found


def test_only_the_clock_reads_the_wall_clock() -> None:
    found = {(str(path.relative_to(ROOT)), call) for path in sorted(ROOT.rglob("*.py"))
             if path.name != "clock.py" or path.parent != ROOT
             for call in wall_clock_reads(path)}
    assert found == set(NOT_DATES), "take 'now' from the clock (`Services.clock`, `store.clock`)"
    functions = {call for path in (ROOT.parents[2] / "functions").rglob("*.py")
                 for call in wall_clock_reads(path)}
    assert functions == set()


def test_the_finder_finds_a_read_of_the_wall_clock(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import time\nfrom datetime import UTC, datetime\n"
                      "a = datetime.now(UTC)\nb = time.time()\nc = time.monotonic()\n")
    assert wall_clock_reads(module) == {"datetime.now", "time.time"}


def test_the_system_clock_tells_aware_utc_and_runs_ahead_only_when_told(
        monkeypatch: pytest.MonkeyPatch) -> None:
    before = datetime.now(UTC)
    now = SystemClock().now()
    assert now.tzinfo is UTC and before <= now <= datetime.now(UTC)
    ahead = SystemClock(timedelta(days=365)).now()
    assert timedelta(days=365) <= ahead - now < timedelta(days=365, minutes=1)
    monkeypatch.setenv(AHEAD_ENV, "365")
    assert SystemClock.from_env().ahead == timedelta(days=365)
    monkeypatch.delenv(AHEAD_ENV)
    assert SystemClock.from_env().ahead == timedelta(0)


def test_a_fixed_clock_stands_still_until_set_or_advanced() -> None:
    clock = FixedClock(datetime(2026, 12, 2, 16, tzinfo=UTC))
    assert clock.now() == clock.now() == datetime(2026, 12, 2, 16, tzinfo=UTC)
    clock.advance(timedelta(days=31))
    assert clock.now() == datetime(2027, 1, 2, 16, tzinfo=UTC)
    clock.set(datetime(2027, 1, 2, 18, tzinfo=timezone(timedelta(hours=2))))
    assert clock.now() == datetime(2027, 1, 2, 16, tzinfo=UTC) and clock.now().tzinfo is UTC
    with pytest.raises(ValueError, match="UTC"):
        clock.set(datetime(2027, 1, 2, 16))


def test_the_services_and_their_store_tell_the_same_time(tmp_path: Path) -> None:
    clock = FixedClock(datetime(2027, 6, 1, tzinfo=UTC))
    services = Services.from_settings(Settings(data_dir=tmp_path), clock)
    try:
        assert services.clock is services.store.clock is clock
    finally:
        services.close()
