"""The `store` fixture: each test that takes it runs on SQLite, on DynamoDB (moto) and on the
in-memory store -- the Store suites in store/ (one file per concern) and the ports whose
adapters keep state in it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from bench_core.ports.store import Store
from bench_core.store.memory.store import MemoryStore
from bench_core.store.sqlite.store import SqliteStore


@pytest.fixture(params=["sqlite", "dynamodb", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        yield MemoryStore.open()
        return
    if request.param == "sqlite":
        s = SqliteStore.open(tmp_path / "bench.db")
        yield s
        s.close()
        return
    from tests.aws.moto_table import dynamo_store

    with dynamo_store() as s:
        yield s
