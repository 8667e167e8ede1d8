from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from bench_core.domain.errors import Forbidden, Unauthorized
from bench_core.domain.field_limits import TRUNCATED, cap
from bench_core.domain.keys import hash_key, may_write, new_key, verify

NOW = datetime(2026, 12, 2, 16, tzinfo=UTC)


def test_small_values_pass_through_and_big_ones_carry_a_marker() -> None:
    assert cap({"a": [1, 2]}, 100) == {"a": [1, 2]}
    assert cap(None, 1) is None
    marked = cap("é" * 5000, 1000)
    assert marked[TRUNCATED] is True and marked["original_bytes"] > 5000
    assert len(marked["preview"].encode()) <= 1000


def test_keys_are_stored_as_hashes_and_verified() -> None:
    raw, record = new_key("alice", now=NOW)
    assert raw.startswith("bk_") and raw not in repr(record)
    assert record.key_hash == hash_key(raw) and raw.startswith(record.prefix)
    assert record.created_at == "2026-12-02T16:00:00.000Z"
    assert verify(raw, record, NOW) is record
    with pytest.raises(Unauthorized):
        verify(raw + "x", record, NOW)
    record.expires_at = "2026-12-02T16:00:01.000Z"  # a temporary key: live until then
    assert verify(raw, record, NOW) is record
    with pytest.raises(Unauthorized):
        verify(raw, record, NOW + timedelta(seconds=1))
    record.expires_at, record.revoked_at = None, "2026-12-02T00:00:00.000Z"
    with pytest.raises(Unauthorized):
        verify(raw, record, NOW)


def test_agent_keys_write_only_their_agent() -> None:
    raw, record = new_key("alice", "one", now=NOW)
    assert raw.startswith("bka_")
    may_write(record, "alice", "one")
    with pytest.raises(Forbidden):
        may_write(record, "alice", "two")
    _, owner = new_key("alice", now=NOW)
    may_write(owner, "alice", "anything")
