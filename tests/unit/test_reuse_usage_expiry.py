"""How long a caller's usage record of a call through Bench is kept (`invoke.usage_expiry`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bench_core.domain.models import KeyRecord, iso
from bench_core.reuse.invoke import usage_expiry

STARTED = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)


def key(expires: datetime | None = None) -> KeyRecord:
    return KeyRecord(key_hash="h", prefix="bk_x", login="carol",
                     expires_at=iso(expires) if expires else None)


def test_a_record_is_kept_as_long_as_raw_events() -> None:
    assert usage_expiry(STARTED, key(), 30) == iso(STARTED + timedelta(days=30))


def test_a_retention_of_zero_keeps_it_for_ever_unless_the_caller_is_temporary() -> None:
    assert usage_expiry(STARTED, key(), 0) is None
    sandbox_ends = STARTED + timedelta(hours=5)
    assert usage_expiry(STARTED, key(sandbox_ends), 0) == iso(sandbox_ends)


def test_a_sandbox_callers_record_goes_with_it_when_that_is_sooner() -> None:
    assert usage_expiry(STARTED, key(STARTED + timedelta(hours=5)), 30) == iso(
        STARTED + timedelta(hours=5))
    assert usage_expiry(STARTED, key(STARTED + timedelta(days=90)), 30) == iso(
        STARTED + timedelta(days=30))
