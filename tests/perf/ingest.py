"""Ingest throughput: events per second through `POST /ingest` on the local server (SQLite),
batches of 50 from 4 concurrent sender processes, measured with 10k and with 1M events already
stored, to show that the cost per event does not grow with history.

    python tests/perf/ingest.py [--stored 10000 1000000] [--batches-per-sender 200]
                                     [--workers N] [--rounds N] [--in-process]

Not a test: the numbers depend on the machine. Goal: >= 20,000 events/s on 2 cores. Besides the
rate it prints the server's CPU time per batch (user + system, all threads), which moves far
less than the rate when the machine is shared. `--workers` sets the server's eval worker pool
(`BENCH_WORKERS`; default 2, as `bench-server serve` runs): the local judge runs in the same
process, keeping to a quarter of the CPU while batches arrive (`workflows/local.py`), so
`--workers 0` shows ingest's own cost. `--in-process` also prints the ceiling without HTTP:
parse + clean + `store.ingest.ingest`, and `store.ingest.ingest` alone.

Where the time goes (server CPU per batch of 50 at 10k stored, py-spy and side by side,
December 2026): about 3.5 ms a batch, until the search index of every task's name, input and
output (`store/sqlite/run_list.py` `tasks_text`, FTS5 trigrams) stopped being written by
triggers in each batch's transaction: FTS5 writes a segment per transaction, and any trigger on
`tasks` made SQLite keep a statement journal of every insert's pages. New spans join it a
thousand at a time (`store/sqlite/run_text.py`), and the WAL is checkpointed a tenth as often
(`store/sqlite/connection.py`); the store's part of a batch then costs some 1.5 ms, the whole
2.4 ms. Parsing and cleaning the batch take about 0.5 ms (pydantic's validation is as fast
as a hand-written check of the SDK's usual events, measured: so the model stays the one
path), uvicorn and FastAPI about 0.4 ms a request (a `GET /healthz` costs as much). The local
server writes the batches that arrive together in one transaction (`ingest/group_commit.py`;
with a savepoint per batch the statement journal cost more than the shared COMMIT saved), and
freezes what it built before serving, which takes the collector's full passes (about 60 ms
each, 7% of the CPU) out of the way. A group's batches of one agent add to the agent's own rows
(counters, days, series, versions, sessions, rank) once for the group, not once per batch
(`store/sqlite/ingest.py` `AgentTotals`: 1.06-1.11x the events per server CPU-second at
50-event batches, side by side). A page cache four times as big, or the file memory-mapped,
changed nothing measurable at a million stored (side by side, December 2026). The events are in
time order, stored and sent, as an agent's are (`task_batch`): with every event at one moment,
as this script sent them until December 2026, the indexes that order tasks by time took each
new task at a random place among a million instead of at their end, which real traffic never
does (1.11x the CPU per event at 1M against 10k then, 1.05x in time order; a WAL checkpointed
at a quarter of the file's pages instead of 10,000 took 8% off the CPU at 1M with one-moment
events but nothing off the time-ordered one, so the WAL stays at some 40 MB). The batch is
parsed on the event loop: the worker-thread hop it used to take cost 1.5 ms of CPU more per
batch, measured side by side. One process is one core's worth of Python (the GIL), so the
in-process figure is the ceiling of the whole server. `uvicorn --workers 2` measured slower,
not faster (writers queue on SQLite's one write lock), and would split the in-process live feed
and eval workers, so the server stays one process.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing as mp
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from bench_core.clock import SYSTEM_CLOCK
from bench_core.domain.keys import new_key
from bench_core.domain.models import AgentMeta, WireEvent, iso
from bench_core.ingest.pipeline import accept_batch
from bench_core.ingest.wire import clean_event, parse_batch
from bench_core.runtime.adapters import Services
from bench_core.settings import Limits, Settings
from bench_core.store.sqlite.store import SqliteStore
from bench_core.workflows.none import NoWorkflows

SLUG = "bench-agent"
BATCH = 50
EPOCH = datetime(2026, 12, 2, 16, tzinfo=UTC)
"""When the first stored event happened."""
SENT_AT = 2_000.0
"""Seconds after `EPOCH` the senders' batches begin: after the stored events, a second apart."""


def task_batch(prefix: str, n_tasks: int, at: float = 0.0) -> list[dict]:
    """`n_tasks` tasks of start, log, end: the shape the SDK sends, the first at `at` seconds
    after `EPOCH`, each next a millisecond later (an agent's events come in time order)."""
    events = []
    for i in range(n_tasks):
        tid = f"{prefix}-{i}"
        ts = iso(EPOCH + timedelta(seconds=at, milliseconds=i))
        events += [
            {"id": f"{tid}-s", "kind": "task.start", "ts": ts, "task_id": tid, "name": "search",
             "input": {"query": "what is bench", "k": 5}},
            {"id": f"{tid}-l", "kind": "task.log", "ts": ts, "task_id": tid, "name": "search",
             "data": {"label": "found", "value": 3}},
            {"id": f"{tid}-e", "kind": "task.end", "ts": ts, "task_id": tid, "name": "search",
             "status": "success", "output": [1, 2, 3], "duration_ms": 120 + i % 300,
             "cost_usd": 0.001},
        ]
    return events


def prefill(path: Path, login: str, target: int) -> None:
    store = SqliteStore.open(path)
    limits = Limits()
    stored = 0
    while stored < target:
        events = task_batch(uuid.uuid4().hex[:8], 334, at=stored / 1000)[: min(1002, target - stored)]
        store.ingest.ingest(login, AgentMeta(slug=SLUG),
                            [clean_event(WireEvent.model_validate(e), limits) for e in events])
        stored += len(events)
    store.close()


def sender(url: str, key: str, batches: int, queue: mp.Queue, batch: int = BATCH) -> None:
    """One sender process on a keep-alive connection, `batches` batches of `batch` events; the
    stdlib client, because a heavier one would eat the CPU the server is being measured on."""
    bodies = []
    for n in range(batches):
        events = task_batch(uuid.uuid4().hex[:10], -(-batch // 3), at=SENT_AT + n)[:batch]
        bodies.append(json.dumps({"agent_slug": SLUG, "events": events}).encode())
    headers = {"X-Bench-Key": key, "Content-Type": "application/json"}
    conn = http.client.HTTPConnection(url.removeprefix("http://"), timeout=60)
    queue.put("ready")
    start = time.perf_counter()
    for body in bodies:
        conn.request("POST", "/ingest", body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"ingest answered {response.status}")
    queue.put(time.perf_counter() - start)


def measure(url: str, key: str, senders: int, batches: int, batch: int = BATCH) -> float:
    """Events/s of `senders` processes sending `batches` batches of `batch` events each."""
    queue: mp.Queue = mp.Queue()
    procs = [mp.Process(target=sender, args=(url, key, batches, queue, batch))
             for _ in range(senders)]
    for p in procs:
        p.start()
    for _ in procs:
        assert queue.get(timeout=120) == "ready"
    t0 = time.perf_counter()
    for _ in procs:
        queue.get(timeout=600)
    elapsed = time.perf_counter() - t0
    for p in procs:
        p.join()
    return senders * batches * batch / elapsed


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process `pid`, all its threads (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _no_push(*_: object) -> None:
    """No live push: nobody watches in the in-process measurement."""


def in_process(data_dir: Path, batches: int) -> tuple[float, float]:
    """Events/s of `accept_batch` (parse + clean + `store.ingest.ingest`, no evals started) and of
    `store.ingest.ingest` alone, no HTTP."""
    _, record = new_key("perf", now=SYSTEM_CLOCK.now())
    store = SqliteStore.open(data_dir / "in-process.db")
    store.accounts.create_key(record)
    limits = Limits()
    ports = Services(Settings(), store).provide(workflows=NoWorkflows())
    bodies = [json.dumps({"agent_slug": SLUG, "events": task_batch(uuid.uuid4().hex[:10], 17)[:BATCH]}
                         ).encode() for _ in range(2 * batches)]
    for body in bodies[:20]:  # warm up
        accept_batch(ports, record, body, later=_no_push)
    start = time.perf_counter()
    for body in bodies[20:batches]:
        accept_batch(ports, record, body, later=_no_push)
    full = (batches - 20) * BATCH / (time.perf_counter() - start)
    cleaned = [[clean_event(e, limits) for e in parse_batch(b, limits).events] for b in bodies[batches:]]
    start = time.perf_counter()
    for events in cleaned:
        store.ingest.ingest("perf", AgentMeta(slug=SLUG), events)
    alone = batches * BATCH / (time.perf_counter() - start)
    store.close()
    return full, alone


def on_path(checkout: Path | None) -> dict[str, str]:
    """The environment that makes a child process import `checkout`'s `bench_core` (none: this
    checkout's, as installed)."""
    if checkout is None:
        return {}
    return {"PYTHONPATH": os.pathsep.join(
        [str(checkout / "layers" / "core"), *filter(None, [os.environ.get("PYTHONPATH")])])}


@contextmanager
def serving(data_dir: Path, workers: int, checkout: Path | None = None
            ) -> Iterator[tuple[str, int]]:
    """`bench-server serve` over `data_dir` with `workers` eval workers, from `checkout` (by
    default, this one): its URL and pid. Its log goes to `server.log` there (with no workers,
    a full eval queue warns), shown if it does not come up."""
    port = free_port()
    log = data_dir / "server.log"
    with log.open("wb") as log_file:
        server = subprocess.Popen(
            [sys.executable, "-m", "bench_core.cli", "serve", "--port", str(port),
             "--data-dir", str(data_dir)],
            # One key sends it all: the server's throughput is measured, not a key's share.
            env={**os.environ, **on_path(checkout), "POWERTOOLS_LOG_LEVEL": "WARNING",
                 "BENCH_WORKERS": str(workers), "BENCH_INGEST_KEY_RATE": "0"},
            stdout=subprocess.DEVNULL, stderr=log_file)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120  # a big database on a loaded machine opens slowly
        while True:
            try:
                httpx.get(url + "/healthz", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit(f"the server at {url} did not come up:\n"
                                     f"{log.read_text()[-3000:]}") from None
                time.sleep(0.1)
        yield url, server.pid
    finally:
        server.terminate()
        server.wait()


def prepared(data_dir: Path, stored: int) -> str:
    """A database of `stored` events and the raw key that sends to it."""
    raw, record = new_key("perf", now=SYSTEM_CLOCK.now())
    store = SqliteStore.open(data_dir / "bench.db")
    store.accounts.create_key(record)
    store.close()
    prefill(data_dir / "bench.db", "perf", stored)
    return raw


def run_at(data_dir: Path, raw: str, senders: int, batches: int, workers: int
           ) -> tuple[float, float]:
    """Events/s through a server over the database in `data_dir`, and its CPU milliseconds
    per batch."""
    with serving(data_dir, workers) as (url, pid):
        measure(url, raw, senders, 10)  # warm up
        cpu = server_cpu_s(pid)
        rate = measure(url, raw, senders, batches)
        return rate, (server_cpu_s(pid) - cpu) / (senders * batches) * 1000


def copied(prepared_dir: Path, into: Path) -> Path:
    """A copy of the prepared database in `prepared_dir` (closed, so its file is whole)."""
    shutil.copy2(prepared_dir / "bench.db", into / "bench.db")
    return into


def spread(values: list[float]) -> str:
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stored", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("--senders", type=int, default=4)
    parser.add_argument("--batches-per-sender", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2, help="the server's eval workers")
    parser.add_argument("--in-process", action="store_true", help="also measure without HTTP")
    parser.add_argument("--rounds", type=int, default=1,
                        help="rounds, each measuring every size in turn (alternating order)")
    args = parser.parse_args()
    if args.in_process:
        with tempfile.TemporaryDirectory() as tmp:
            full, alone = in_process(Path(tmp), 400)
        print(f"in process: {full:,.0f} events/s parse + clean + store; "
              f"{alone:,.0f} events/s store.ingest.ingest alone", flush=True)
    with tempfile.TemporaryDirectory() as keep:
        keys = {}
        for stored in args.stored:  # each size's database written once, copied for each round
            (Path(keep) / str(stored)).mkdir()
            keys[stored] = prepared(Path(keep) / str(stored), stored)
        rates: dict[int, list[float]] = {stored: [] for stored in args.stored}
        cpus: dict[int, list[float]] = {stored: [] for stored in args.stored}
        for round_ in range(args.rounds):
            for stored in args.stored if round_ % 2 == 0 else args.stored[::-1]:
                with tempfile.TemporaryDirectory() as tmp:
                    t0 = time.perf_counter()
                    rate, cpu_ms = run_at(copied(Path(keep) / str(stored), Path(tmp)),
                                          keys[stored], args.senders, args.batches_per_sender,
                                          args.workers)
                rates[stored].append(rate)
                cpus[stored].append(cpu_ms)
                print(f"{stored:>9,} events stored: {rate:>9,.0f} events/s "
                      f"({1e6 / rate:.1f} µs/event; server CPU {cpu_ms:.2f} ms/batch; "
                      f"run took {time.perf_counter() - t0:.0f} s)", flush=True)
    if len(args.stored) > 1:
        lo, hi = min(args.stored), max(args.stored)
        print(f"cost per event at {hi:,} vs {lo:,} stored (min / median / max of "
              f"{args.rounds}): server CPU "
              f"{spread([big / small for big, small in zip(cpus[hi], cpus[lo], strict=True)])}x, "
              f"wall clock "
              f"{spread([small / big for big, small in zip(rates[hi], rates[lo], strict=True)])}x")

if __name__ == "__main__":
    main()
