"""Ingest encodes each event's body once and hands that JSON to the store: what comes back must
be exactly the cleaned body, and the cap must still be measured in bytes, not characters."""

from __future__ import annotations

from bench_core.domain.field_limits import TRUNCATED, dumps
from bench_core.domain.models import AgentMeta, AgentRef
from bench_core.ports.store import Store
from bench_core.settings import Limits

from tests.factories import clean, ev

REF = AgentRef("alice", "agent-1")
META = AgentMeta(slug="agent-1")
LIMITS = Limits(max_field_bytes=1024)


def test_stored_events_are_the_cleaned_bodies(store: Store) -> None:
    events = clean([ev("task.start", "t1", name="søk", input={"q": "naïve ✓", "k": [1, 2.5, None]}),
                    ev("task.log", "t1", data={"label": "found", "value": 3}),
                    ev("custom", output=None, data={"nested": {"deep": True}})], LIMITS)
    assert all(e.body_json == dumps(e.body) for e in events)
    store.ingest.ingest(REF.login, META, events)
    assert store.ingest.recent_events(REF, 10)[::-1] == [e.body for e in events]


def test_a_value_within_the_cap_in_characters_but_not_in_bytes_is_truncated(store: Store) -> None:
    wide = "é" * 700  # 700 characters, 1,400 bytes of UTF-8
    [event] = clean([ev("task.start", "t1", input=wide)], LIMITS)
    assert event.body_json is None
    store.ingest.ingest(REF.login, META, [event])
    stored = store.ingest.recent_events(REF, 1)[0]["input"]
    assert stored[TRUNCATED] is True and stored["original_bytes"] > 1024


def test_an_explicit_null_is_stored_and_an_absent_field_is_not(store: Store) -> None:
    [event] = clean([ev("task.end", "t1", status="success", output=None)], LIMITS)
    store.ingest.ingest(REF.login, META, [event])
    body = store.ingest.recent_events(REF, 1)[0]
    assert "output" in body and body["output"] is None and "input" not in body
