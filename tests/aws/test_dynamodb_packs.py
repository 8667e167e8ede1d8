"""DynamoDB packs (`store/dynamodb/codec/packs.py`): the spans of one trace that a batch starts
and ends, handing nothing up, are one item, and every read of them (by id, a run's pages, a
task's subtasks, a run's counts, a span's events) reads what SQLite reads of the same batches;
a packed span written again leaves its pack; a batch cut short at any request counts once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bench_core.domain.models import AgentMeta, AgentRef, TaskState
from bench_core.domain.runs import span_key
from bench_core.ports.store import Store
from bench_core.store.dynamodb.codec.packs import PACK_BYTES, PACK_SPANS, pack_size
from bench_core.store.dynamodb.codec.values import plain
from bench_core.store.dynamodb.store import DynamoStore
from bench_core.store.sqlite.store import SqliteStore
from pydantic_core import from_json

from tests.aws.moto_table import dynamo_store
from tests.aws.test_dynamodb_ingest_cost import Crash, crash_at, requests_of
from tests.factories import clean, ev

REF = AgentRef("alice", "tracer")
TRACE = "0af7651916cd43dd8448eb211c80319c"


def sid(name: str) -> str:
    """The OTLP task id of span `name` of `TRACE` (`ingest/otlp/mapping.py` `task_id`)."""
    return f"{TRACE}-{name.encode().hex():0<16}"[:49]


def spans(*specs: tuple[str, str | None, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every span's start, then every end, in the order given (so their starts interleave)."""
    starts = [ev("task.start", sid(name), name=name, input={"q": name},
                 parent_task_id=parent and sid(parent)) for name, parent, _ in specs]
    ends = [ev("task.end", sid(name), name=name, parent_task_id=parent and sid(parent),
               status=end.get("status", "success"), output=f"out {name}", duration_ms=5,
               cost_usd=end.get("cost", 0.0)) for name, parent, end in specs]
    return [*starts, *ends]


FIRST = spans(("root", None, {}), ("a", "root", {}), ("paid", "root", {"cost": 0.25}),
              ("b", "root", {}), ("c", "root", {"status": "failed"}), ("d", "a", {}))
"""`paid` hands its cost up (its own item, in the transaction); `a`, `b`, `c` and `d` hand
nothing: one pack, its rows around `paid`'s."""
SECOND = [ev("task.log", sid("b"), data={"note": "late"}),
          *spans(("e", "c", {"cost": 0.5}), ("f", "root", {}), ("g", "root", {}))]
"""A log of `b` and a child of `c` handing it a cost: both leave the pack; `f` and `g` make
another."""
NAMES = ("root", "a", "paid", "b", "c", "d", "e", "f", "g")


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[DynamoStore, Store]]:
    sqlite = SqliteStore.open(tmp_path / "bench.db")
    with dynamo_store() as dynamo:
        yield dynamo, sqlite
    sqlite.close()


def send(store: Store, events: list[dict[str, Any]]) -> None:
    store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), clean(events))


def shown(task: TaskState | None) -> tuple[Any, ...] | None:
    if task is None:
        return None
    return (task.task_id, task.parent_task_id, task.name, task.status, task.started_at,
            task.ended_at, task.duration_ms, task.cost_usd, task.child_cost_usd, task.run_id,
            task.input, task.output, [log.get("data") for log in task.logs])


def light(task: TaskState) -> tuple[Any, ...]:
    return (task.task_id, task.parent_task_id, task.status, task.started_at, task.ended_at)


def pages(store: Store, root: TaskState, limit: int, content: bool) -> list[tuple[Any, ...]]:
    """A run's spans read `limit` at a time, as the run page and its JSON read them."""
    read: list[TaskState] = []
    after = None
    while True:
        page = store.runs.run_spans(REF, root, limit=limit, after=after, content=content)
        read += page
        if len(page) < limit:
            return [shown(t) if content else light(t) for t in read]
        after = span_key(page[-1])


def reads(store: Store) -> tuple[Any, ...]:
    root = store.ingest.get_task(REF, sid("root"))
    assert root is not None
    kids, more = store.ingest.list_tasks(REF, parent=sid("root"), limit=2)
    listed = [t.task_id for t in kids]
    while more:
        kids, more = store.ingest.list_tasks(REF, parent=sid("root"), limit=2, cursor=more)
        listed += [t.task_id for t in kids]
    failed, _ = store.ingest.list_tasks(REF, parent=sid("root"), status="failed")
    return ({name: shown(store.ingest.get_task(REF, sid(name))) for name in NAMES},
            store.ingest.subtask_ids(REF, [sid(name) for name in NAMES]), listed,
            [t.task_id for t in failed],
            {limit: pages(store, root, limit, content=False) for limit in (1, 2, 3, 100)},
            pages(store, root, 2, content=True), store.runs.run_counts(REF, root),
            {name: [e["id"] for e in store.ingest.task_events(REF, sid(name))]
             for name in NAMES})


def items(store: DynamoStore, prefix: str) -> dict[str, dict[str, Any]]:
    found = store.client.scan(TableName=store.table_name)["Items"]
    return {i["sk"]["S"]: i for i in found if i["sk"]["S"].startswith(prefix)}


def packed(store: DynamoStore) -> list[list[str]]:
    """The spans of each pack, by name."""
    return sorted(sorted(bytes.fromhex(suffix.rstrip("0")).decode()
                         for suffix, *_ in from_json(item["row"]["S"]))
                  for item in items(store, "PACK#").values())


def test_a_traces_spans_that_hand_nothing_up_are_one_item_and_read_as_on_sqlite(
        stores: tuple[DynamoStore, Store]) -> None:
    dynamo, sqlite = stores
    for store in stores:
        send(store, FIRST)
    assert packed(dynamo) == [["a", "b", "c", "d"]]
    assert set(items(dynamo, "TASK#")) == {f"TASK#{sid('root')}", f"TASK#{sid('paid')}"}
    assert reads(dynamo) == reads(sqlite)


def test_a_packed_span_written_again_leaves_its_pack(stores: tuple[DynamoStore, Store]) -> None:
    dynamo, sqlite = stores
    for store in stores:
        send(store, FIRST)
        send(store, SECOND)
    assert packed(dynamo) == [["a", "d"], ["f", "g"]]
    assert {f"TASK#{sid('b')}", f"TASK#{sid('c')}"} <= set(items(dynamo, "TASK#"))
    expected = reads(sqlite)
    assert reads(dynamo) == expected
    c = dynamo.ingest.get_task(REF, sid("c"))
    assert c is not None and c.child_cost_usd == 0.5
    for store in stores:  # sent again: nothing new, nothing counted twice
        assert store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug),
                                   clean([*FIRST, *SECOND])).accepted == 0
    assert reads(dynamo) == expected


def test_a_pack_emptied_by_its_spans_leaving_is_deleted(stores: tuple[DynamoStore, Store]
                                                        ) -> None:
    dynamo, sqlite = stores
    logs = [ev("task.log", sid(name), data={"n": name}) for name in "abcd"]
    for store in stores:
        send(store, FIRST)
        send(store, logs)
    assert packed(dynamo) == []
    assert reads(dynamo) == reads(sqlite)


def test_a_batch_of_packed_spans_cut_short_at_any_request_counts_once_when_sent_again(
        tmp_path: Path) -> None:
    sqlite = SqliteStore.open(tmp_path / "bench.db")
    send(sqlite, FIRST)
    send(sqlite, SECOND)
    expected = reads(sqlite)
    sqlite.close()
    for batch in (FIRST, SECOND):
        with dynamo_store() as store:
            if batch is SECOND:
                send(store, FIRST)
            total = requests_of(store, lambda: send(store, batch))  # noqa: B023
        for n in range(total):
            with dynamo_store() as store:
                if batch is SECOND:
                    send(store, FIRST)
                hook = crash_at(store, n)
                with pytest.raises(Crash):
                    send(store, batch)
                store.client.meta.events.unregister("before-call.dynamodb", hook)
                send(store, batch)
                if batch is FIRST:
                    send(store, SECOND)
                assert reads(store) == expected, (batch is FIRST, n)


def test_a_pack_holds_at_most_sixteen_spans_and_stays_far_below_sixty_four_kilobytes() -> None:
    """Forty subtasks of one trace in one batch, half with 150 logs each (their digests are
    most of a pack): several packs, each within `PACK_SPANS` and `PACK_BYTES` (a few KB), every
    span read back and counted."""
    names = [f"s{n:02d}" for n in range(40)]
    events = spans(("root", None, {}), *((name, "root", {}) for name in names))
    for name in names[::2]:
        events += [ev("task.log", sid(name), data={"i": i}) for i in range(150)]
    with dynamo_store() as store:
        store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), clean(events))
        packs = [{**plain(p), "digests": p["digests"]["B"]}
                 for p in items(store, "PACK#").values()]
        held = [len(from_json(p["row"])) for p in packs]
        assert len(packs) > 1 and sum(held) > PACK_SPANS and max(held) <= PACK_SPANS, held
        assert max(map(pack_size, packs)) <= PACK_BYTES <= 64_000 // 4
        assert max(sum(len(str(p[k])) for k in ("pk", "sk", "spk", "ssk", "run_id"))
                   for p in packs) < 400
        root = store.ingest.get_task(REF, sid("root"))
        assert root is not None
        assert store.runs.run_counts(REF, root).spans == 40
        assert [t.name for t in store.runs.run_spans(REF, root, limit=100)] == names
        assert all(store.ingest.get_task(REF, sid(name)) is not None for name in names)
