"""Bytes on disk per stored span and per stored event: the same OTLP GenAI spans (`otlp.py`'s
traces of an agent invocation, two chat calls and a tool call) sent to the local server
(SQLite) and to Arize Phoenix (its own server and SQLite), side by side in one run; and events
of the SDK's usual shape (`ingest.py`'s tasks of start, log and end) through `POST /ingest`.

    python tests/perf/storage.py [--batches 20] [--events 50000] [--phoenix PATH]
                                 [--against TREE]

Each database is measured after its server has stopped (its WAL checkpointed into the file) and
once more after VACUUM, with SQLite's `dbstat`: the pages of each table and index, how many are
overflow pages, and the bytes left unused on them. Bench's judge runs as it does in
`bench-server serve` and is waited for, so that each run's evaluation is in the figure.

Phoenix runs from its own virtualenv (`python -m venv /work/phoenix-venv &&
/work/phoenix-venv/bin/pip install arize-phoenix`, then `--phoenix /work/phoenix-venv/bin/phoenix`;
default: `phoenix` on PATH, else its rows are skipped, saying why). `--against` another tree of
Bench (a checkout of main) measures its server too, on the same payloads in the same run: its
own code creates its database and its key and serves (`PYTHONPATH=<tree>/layers/core`).

Not a test: the figures depend on the payloads. Goals: at most Phoenix's bytes per span, and at
most 300 bytes per `/ingest` event.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.perf import otlp  # noqa: E402  (its payloads, servers and senders)
from tests.perf.ingest import BATCH as EVENTS_PER_BATCH  # noqa: E402
from tests.perf.ingest import SLUG, task_batch  # noqa: E402


@dataclass
class Size:
    label: str
    items: int
    file_bytes: int
    vacuumed_bytes: int
    overflow_pages: int
    unused_bytes: int
    tables: list[tuple[str, int, int]]

    def line(self) -> str:
        return (f"{self.label:<30} {self.file_bytes / self.items:>8,.0f} "
                f"{self.vacuumed_bytes / self.items:>9,.0f} {self.overflow_pages:>9,} "
                f"{self.unused_bytes / 1e6:>9.1f} MB")

    def breakdown(self) -> str:
        return "\n".join(f"    {name:<28} {size / self.items:>7,.0f} B/item  "
                         f"{unused / max(size, 1):>4.0%} unused"
                         for name, size, unused in self.tables[:10])


def measure(label: str, path: Path, items: int) -> Size:
    """The file at `path` (its server stopped), as it is and after VACUUM (of a copy)."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        overflow, unused = db.execute(
            "SELECT sum(pagetype = 'overflow'), sum(unused) FROM dbstat").fetchone()
        tables = db.execute("SELECT name, sum(pgsize), sum(unused) FROM dbstat GROUP BY name "
                            "ORDER BY 2 DESC").fetchall()
    size = path.stat().st_size
    copy = path.with_name("vacuumed.db")
    shutil.copyfile(path, copy)
    with sqlite3.connect(copy) as db:
        db.execute("VACUUM")
    vacuumed = copy.stat().st_size
    copy.unlink()
    return Size(label, items, size, vacuumed, overflow or 0, unused or 0, tables)


def judged(path: Path, idle_s: float = 20) -> None:
    """Wait until the judge has evaluated every finished run, or has evaluated none for
    `idle_s` (what its queue refused waits for the next sweep)."""
    last, since = -1, time.monotonic()
    while time.monotonic() - since < idle_s:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            (left,) = db.execute("SELECT count(*) FROM tasks WHERE parent_task_id IS NULL "
                                 "AND ended_at IS NOT NULL AND eval_status IS NULL").fetchone()
        if not left:
            return
        if left != last:
            last, since = left, time.monotonic()
        time.sleep(0.5)
    print(f"  (the judge left {left:,} runs for its sweep)")


NEW_KEY = """
import sys
from bench_core.clock import SYSTEM_CLOCK
from bench_core.domain.keys import new_key
from bench_core.store.sqlite.store import SqliteStore
raw, record = new_key("perf", now=SYSTEM_CLOCK.now())
store = SqliteStore.open(sys.argv[1])
store.accounts.create_key(record)
store.close()
print(raw)
"""


@contextmanager
def bench_of(tree: Path | None, data_dir: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """This tree's server (`otlp.bench`), or `tree`'s: its database and key made by its own
    code, then its server."""
    if tree is None:
        with otlp.bench(data_dir) as served:
            yield served
        return
    env = {"PYTHONPATH": str(tree / "layers" / "core")}
    raw = subprocess.run([sys.executable, "-c", NEW_KEY, str(data_dir / "bench.db")],
                         env={**os.environ, **env}, check=True, capture_output=True,
                         text=True).stdout.strip()
    port = otlp.free_port()
    with otlp.process([sys.executable, "-m", "bench_core.cli", "serve", "--port", str(port),
                       "--data-dir", str(data_dir)],
                      {**env, "POWERTOOLS_LOG_LEVEL": "WARNING", "BENCH_INGEST_KEY_RATE": "0"},
                      data_dir / "server.log"):
        url = f"http://127.0.0.1:{port}"
        otlp.wait_up(url, 60)
        yield url, {"X-Bench-Key": raw}


def bench_spans(tree: Path | None, label: str, bodies: list[bytes], senders: int) -> Size:
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        with bench_of(tree, data_dir) as (url, headers):
            otlp.send_all(url, otlp.PROTOBUF, headers, bodies, senders)
            judged(data_dir / "bench.db")
        return measure(f"{label} OTLP spans", data_dir / "bench.db", len(bodies) * otlp.BATCH)


def phoenix_spans(exe: str, bodies: list[bytes], senders: int) -> Size:
    with tempfile.TemporaryDirectory() as tmp:
        work_dir = Path(tmp)
        total = len(bodies) * otlp.BATCH
        with otlp.phoenix(exe, work_dir) as url:
            otlp.send_all(url, otlp.PROTOBUF, {}, bodies, senders)
            deadline = time.monotonic() + 1800
            while otlp.phoenix_spans(work_dir) < total:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Phoenix stored {otlp.phoenix_spans(work_dir)} of {total}")
                time.sleep(0.2)
        return measure("Phoenix OTLP spans", work_dir / "phoenix.db", total)


def bench_events(tree: Path | None, label: str, events: int) -> Size:
    batches = events // EVENTS_PER_BATCH
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        with bench_of(tree, data_dir) as (url, headers):
            conn = http.client.HTTPConnection(url.removeprefix("http://"), timeout=60)
            for _ in range(batches):
                body = json.dumps({"agent_slug": SLUG, "events": task_batch(
                    uuid.uuid4().hex[:10], 17)[:EVENTS_PER_BATCH]}).encode()
                conn.request("POST", "/ingest", body=body,
                             headers={**headers, "Content-Type": "application/json"})
                response = conn.getresponse()
                response.read()
                if response.status != 200:
                    raise RuntimeError(f"/ingest answered {response.status}")
            judged(data_dir / "bench.db")
        return measure(f"{label} /ingest events", data_dir / "bench.db",
                       batches * EVENTS_PER_BATCH)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=20, help="batches of 512 OTLP spans")
    parser.add_argument("--senders", type=int, default=2)
    parser.add_argument("--events", type=int, default=50_000, help="/ingest events")
    parser.add_argument("--phoenix", default=shutil.which("phoenix"),
                        help="the `phoenix` executable of a virtualenv with arize-phoenix")
    parser.add_argument("--against", type=Path,
                        help="another tree of Bench (a checkout of main) measured beside this")
    args = parser.parse_args()
    rng = random.Random(7)
    bodies = [otlp.export_request(rng) for _ in range(args.batches)]
    trees: list[tuple[Path | None, str]] = [(None, "Bench")]
    if args.against:
        trees.append((args.against.resolve(), args.against.resolve().name))
    sizes = [bench_spans(tree, label, bodies, args.senders) for tree, label in trees]
    if args.phoenix:
        sizes.append(phoenix_spans(args.phoenix, bodies, args.senders))
    sizes += [bench_events(tree, label, args.events) for tree, label in trees]
    print(f"{'':<30} {'B/item':>8} {'vacuumed':>9} {'overflow':>9} {'unused':>12}")
    for size in sizes:
        print(size.line())
    if not args.phoenix:
        print("Phoenix: skipped, no `phoenix` executable (see the module docstring)")
    else:
        bench, phoenix = sizes[0], sizes[len(trees)]
        print(f"Bench / Phoenix bytes per span: {bench.file_bytes / phoenix.file_bytes:.2f}x "
              f"({bench.vacuumed_bytes / phoenix.vacuumed_bytes:.2f}x vacuumed)")
    if args.against:
        spans, events = sizes[:2], sizes[-2:]
        print(f"this tree / {trees[1][1]} bytes per span: "
              f"{spans[0].file_bytes / spans[1].file_bytes:.2f}x, per event: "
              f"{events[0].file_bytes / events[1].file_bytes:.2f}x")
    for size in sizes:
        print(f"{size.label} ({size.items:,}), by table and index:\n{size.breakdown()}")


if __name__ == "__main__":
    main()
