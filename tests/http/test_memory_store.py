"""A server runs on the in-memory store (`BENCH_STORE=memory`) as on SQLite: one machine, so
batches are stored and shown, the local worker pool judges finished runs and the sign-in link
works, and nothing is written to the data directory."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from bench_core.runtime.adapters import open_store
from bench_core.settings import Settings
from bench_core.store.memory.store import MemoryStore

from tests.conftest import poll, serving
from tests.factories import batch, task_events
from tests.http.accounts_support import Browser
from tests.http.test_ingest_http import post


def test_bench_store_memory_opens_the_in_memory_store(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    monkeypatch.setenv("BENCH_STORE", "memory")
    settings = Settings.from_env(data_dir=tmp_path)
    assert isinstance(open_store(settings), MemoryStore) and settings.embedded_store
    with pytest.raises(ValueError, match="use sqlite, dynamodb or memory"):
        open_store(Settings(store="mysql"))


def test_a_server_on_memory_stores_judges_and_signs_in_without_a_file(tmp_path: Path) -> None:
    with serving(tmp_path, store="memory") as server:
        assert isinstance(server.store, MemoryStore)
        login = "m" + uuid.uuid4().hex[:10]
        key = server.create_key(login)
        events = task_events("t1", duration_ms=40) + task_events("t2", status="failed")
        response = post(server, batch("kept", events), key)
        assert response.status_code == 200 and response.json()["accepted"] == 4
        profile = server.get(f"/api/agents/{login}/kept", key)
        assert (profile["runs"], profile["successes"], profile["failures"]) == (2, 1, 1)
        poll(lambda: server.get(f"/api/agents/{login}/kept", key)["eval_count"],
             lambda judged: judged == 2)
        assert Browser(server).sign_in(login) == login
    assert list(tmp_path.glob("*.db*")) == []
