"""What a test pays for its store: opening one and a small workload (20 batches of one task,
each read back with its agent), SQLite in a fresh file against the in-memory store, side by
side in one run. The in-memory store serves the tests of use cases and surfaces; this is why
it is plain dicts rather than SQLite on `:memory:`, which would still run the 15 migrations at
every open and the SQL of every call (and gives each connection a database of its own, where
the SQLite adapter keeps a reader per thread and one writer).

    python tests/perf/store_choice.py [--stores 40] [--rounds 3]

Not a test: the numbers depend on the machine. Measured December 2026, shared 2-core machine:
opening a SQLite store 6-11 ms (its migrations), memory 0.02 ms; per store with the workload
14-30 ms against 2.5 ms; a batch 0.25-0.3 ms against 0.08 ms; a read about the same (0.03).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_core.domain.models import AgentMeta, AgentRef
from bench_core.ports.store import Store
from bench_core.store.memory.store import MemoryStore
from bench_core.store.sqlite.store import SqliteStore

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.factories import clean, task_events  # noqa: E402

REF = AgentRef("alice", "agent")


def measure(open_store: Callable[[], Store], stores: int) -> tuple[float, float, float, float]:
    """Milliseconds: to open a store, for a store with the workload, per batch, per read."""
    opening = ingesting = reading = 0.0
    start = time.perf_counter()
    for _ in range(stores):
        t0 = time.perf_counter()
        store = open_store()
        t1 = time.perf_counter()
        for j in range(20):
            store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), clean(task_events(f"t{j}")))
        t2 = time.perf_counter()
        for j in range(20):
            store.ingest.get_task(REF, f"t{j}")
            store.agents.get_agent(REF)
        reading += time.perf_counter() - t2
        ingesting += t2 - t1
        opening += t1 - t0
        store.close()
    whole = time.perf_counter() - start
    return (opening / stores * 1e3, whole / stores * 1e3, ingesting / stores / 20 * 1e3,
            reading / stores / 40 * 1e3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="store-choice-"))
    print(f"{'':8} {'open ms':>8} {'store ms':>9} {'batch ms':>9} {'read ms':>8}")
    files = itertools.count()
    openers: dict[str, Callable[[], Store]] = {
        "sqlite": lambda: SqliteStore.open(directory / f"{next(files)}.db"),
        "memory": MemoryStore.open}
    for _ in range(args.rounds):
        for kind, opener in openers.items():
            opened, whole, batch, read = measure(opener, args.stores)
            print(f"{kind:8} {opened:8.2f} {whole:9.2f} {batch:9.3f} {read:8.3f}")


if __name__ == "__main__":
    main()
