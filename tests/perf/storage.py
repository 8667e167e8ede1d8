"""Bytes on disk per stored span and per stored event: the same OTLP GenAI spans (`otlp.py`'s
traces of an agent invocation, two chat calls and a tool call) sent to the local server
(SQLite) and to Arize Phoenix (its own server and SQLite), side by side in one run; and events
of the SDK's usual shape (`ingest.py`'s tasks of start, log and end) through `POST /ingest`.

    python tests/perf/storage.py [--batches 20] [--events 50000] [--phoenix PATH]

Each database is measured after its server has stopped (its WAL checkpointed into the file) and
once more after VACUUM, with SQLite's `dbstat`: the pages of each table and index, how many are
overflow pages, and the bytes left unused on them. Bench's judge runs as it does in
`bench-server serve` and is waited for, so that each run's evaluation is in the figure.

Phoenix runs from its own virtualenv (`python -m venv /work/phoenix-venv &&
/work/phoenix-venv/bin/pip install arize-phoenix`, then `--phoenix /work/phoenix-venv/bin/phoenix`;
default: `phoenix` on PATH, else its rows are skipped, saying why). To compare with another tree
of Bench, run this file with `PYTHONPATH=<that tree>/layers/core`.

Not a test: the figures depend on the payloads. Goals: at most Phoenix's bytes per span, and at
most 300 bytes per `/ingest` event.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import shutil
import sqlite3
import sys
import tempfile
import time
import uuid
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


def bench_spans(bodies: list[bytes], senders: int) -> Size:
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        with otlp.bench(data_dir) as (url, headers):
            otlp.send_all(url, otlp.PROTOBUF, headers, bodies, senders)
            judged(data_dir / "bench.db")
        return measure("Bench OTLP spans", data_dir / "bench.db", len(bodies) * otlp.BATCH)


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


def bench_events(events: int) -> Size:
    batches = events // EVENTS_PER_BATCH
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        with otlp.bench(data_dir) as (url, headers):
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
        return measure("Bench /ingest events", data_dir / "bench.db",
                       batches * EVENTS_PER_BATCH)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=20, help="batches of 512 OTLP spans")
    parser.add_argument("--senders", type=int, default=2)
    parser.add_argument("--events", type=int, default=50_000, help="/ingest events")
    parser.add_argument("--phoenix", default=shutil.which("phoenix"),
                        help="the `phoenix` executable of a virtualenv with arize-phoenix")
    args = parser.parse_args()
    rng = random.Random(7)
    bodies = [otlp.export_request(rng) for _ in range(args.batches)]
    sizes = [bench_spans(bodies, args.senders)]
    if args.phoenix:
        sizes.append(phoenix_spans(args.phoenix, bodies, args.senders))
    sizes.append(bench_events(args.events))
    print(f"{'':<30} {'B/item':>8} {'vacuumed':>9} {'overflow':>9} {'unused':>12}")
    for size in sizes:
        print(size.line())
    if not args.phoenix:
        print("Phoenix: skipped, no `phoenix` executable (see the module docstring)")
    else:
        bench, phoenix = sizes[0], sizes[1]
        print(f"Bench / Phoenix bytes per span: {bench.file_bytes / phoenix.file_bytes:.2f}x "
              f"({bench.vacuumed_bytes / phoenix.vacuumed_bytes:.2f}x vacuumed)")
    for size in sizes:
        print(f"{size.label} ({size.items:,}), by table and index:\n{size.breakdown()}")


if __name__ == "__main__":
    main()
