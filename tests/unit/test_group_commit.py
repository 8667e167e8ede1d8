"""The local server's group commit (`ingest/group_commit.py`) over the in-memory store: the
batches handed over together are written in one `ingest_many`, each answered with its own
outcome or error, and a group waits for a request whose body is still arriving, for a while."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import pytest
from bench_core.domain.errors import TooManyAgents
from bench_core.domain.models import AgentMeta, AgentRef, IngestOutcome, IngestWrite
from bench_core.ingest.group_commit import GroupCommit
from bench_core.ports.store import IngestStore, Store
from bench_core.store.memory.store import MemoryStore

from tests.factories import clean, task_events


class Counted:
    """The store's own `ingest_many`, noting the groups it was handed."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.groups: list[list[str]] = []

    def ingest_many(self, writes: Sequence[IngestWrite]) -> list[IngestOutcome | Exception]:
        self.groups.append([w.meta.slug for w in writes])
        return self.store.ingest.ingest_many(writes)


def write(slug: str, task: str = "t") -> IngestWrite:
    return IngestWrite("alice", AgentMeta(slug=slug), clean(task_events(task)))


def group_commit(store: Store, **options: float) -> tuple[GroupCommit, Counted]:
    counted = Counted(store)
    ingest: IngestStore = counted  # type: ignore[assignment]
    return GroupCommit(ingest, **options), counted  # type: ignore[arg-type]


def test_batches_handed_over_together_are_one_write_each_with_its_own_answer() -> None:
    store = MemoryStore.open(max_agents_per_account=2)
    commit, counted = group_commit(store)

    async def send() -> list[IngestOutcome | BaseException]:
        return await asyncio.gather(commit.write(write("a")), commit.write(write("b")),
                                    commit.write(write("c")), commit.write(write("a", "u")),
                                    return_exceptions=True)

    results = asyncio.run(send())
    assert counted.groups == [["a", "b", "c", "a"]]
    assert [type(r) for r in results] == [IngestOutcome, IngestOutcome, TooManyAgents,
                                          IngestOutcome]
    assert store.agents.get_agent(AgentRef("alice", "a")).stats.runs == 2
    assert store.agents.get_agent(AgentRef("alice", "c")) is None


def test_a_lone_batch_is_written_at_once_and_a_big_group_is_split() -> None:
    store = MemoryStore.open()
    commit, counted = group_commit(store, max_events=4)

    async def send() -> None:
        await commit.write(write("a"))
        await asyncio.gather(*(commit.write(write(slug)) for slug in "bcd"))

    asyncio.run(send())
    assert counted.groups == [["a"], ["b", "c"], ["d"]]


def test_a_batch_handed_over_a_turn_of_the_loop_later_joins_the_group() -> None:
    """A request that came while the batch before it was cleaned starts its handler at the
    next turn of the loop (the turn that polls for it): its batch is written with the one
    before, not after it."""
    commit, counted = group_commit(MemoryStore.open())

    async def send() -> None:
        first = asyncio.create_task(commit.write(write("a")))
        await asyncio.sleep(0)  # "a" handed over at this turn; "b" starts at the next
        await asyncio.gather(first, commit.write(write("b")))

    asyncio.run(send())
    assert counted.groups == [["a", "b"]]


def test_a_group_waits_for_a_body_still_arriving_but_not_for_long() -> None:
    commit, counted = group_commit(MemoryStore.open(), max_wait_s=0.05)

    async def arriving_in(seconds: float, slug: str) -> IngestOutcome:
        with commit.arriving():
            await asyncio.sleep(seconds)
        return await commit.write(write(slug))

    async def send() -> float:
        start = time.monotonic()
        await asyncio.gather(arriving_in(0.01, "b"), commit.write(write("a")))
        return time.monotonic() - start

    assert asyncio.run(send()) < 0.05
    assert counted.groups == [["a", "b"]]
    counted.groups.clear()

    async def slow() -> float:
        start = time.monotonic()
        late = asyncio.create_task(arriving_in(0.5, "d"))
        first = asyncio.create_task(commit.write(write("c")))
        await first
        waited = time.monotonic() - start
        await late
        return waited

    assert asyncio.run(slow()) < 0.4
    assert counted.groups == [["c"], ["d"]]


def test_a_request_given_up_before_its_group_is_not_written() -> None:
    store = MemoryStore.open()
    commit, counted = group_commit(store)

    async def send() -> None:
        given_up = asyncio.create_task(commit.write(write("gone")))
        kept = asyncio.create_task(commit.write(write("kept")))
        await asyncio.sleep(0)  # both handed over, the group not yet written
        given_up.cancel()
        await kept
        with pytest.raises(asyncio.CancelledError):
            await given_up

    asyncio.run(send())
    assert counted.groups == [["kept"]]
    assert store.agents.get_agent(AgentRef("alice", "gone")) is None
