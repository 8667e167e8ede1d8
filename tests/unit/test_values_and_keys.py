from __future__ import annotations

import pytest
from bench_core.domain.errors import Forbidden, Unauthorized
from bench_core.domain.field_limits import TRUNCATED, cap
from bench_core.domain.keys import hash_key, may_write, new_key, verify


def test_small_values_pass_through_and_big_ones_carry_a_marker() -> None:
    assert cap({"a": [1, 2]}, 100) == {"a": [1, 2]}
    assert cap(None, 1) is None
    marked = cap("é" * 5000, 1000)
    assert marked[TRUNCATED] is True and marked["original_bytes"] > 5000
    assert len(marked["preview"].encode()) <= 1000


def test_keys_are_stored_as_hashes_and_verified() -> None:
    raw, record = new_key("alice")
    assert raw.startswith("bk_") and raw not in repr(record)
    assert record.key_hash == hash_key(raw) and raw.startswith(record.prefix)
    assert verify(raw, record) is record
    with pytest.raises(Unauthorized):
        verify(raw + "x", record)
    record.revoked_at = "2026-12-02T00:00:00.000Z"
    with pytest.raises(Unauthorized):
        verify(raw, record)


def test_agent_keys_write_only_their_agent() -> None:
    raw, record = new_key("alice", "one")
    assert raw.startswith("bka_")
    may_write(record, "alice", "one")
    with pytest.raises(Forbidden):
        may_write(record, "alice", "two")
    _, owner = new_key("alice")
    may_write(owner, "alice", "anything")
