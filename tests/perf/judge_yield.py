"""The local judge yields to ingest: events/s through `POST /ingest` with the server's eval
workers on (`BENCH_WORKERS=2`, the default) and off (0), side by side, in alternating rounds,
and how long the judge takes after a burst to judge every run the burst finished.

    python tests/perf/judge_yield.py [--rounds 3] [--bursts 3] [--stored 10000]
                                      [--batches-per-sender 100]

Not a test: the numbers depend on the machine. Goal: ingest with the judge on within 10% of
ingest with it off (the judge waits while batches keep arriving, `workflows/local.py`), and the
judge caught up a few seconds after each burst. The server's CPU per batch during the bursts
(the judge's share included) moves less than events/s on a shared machine. Every batch here
finishes 17 runs, so each one queues 17 evals for the offline judge (`evals/heuristic.py`).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench_core.store.sqlite.store import SqliteStore
from ingest import BATCH, measure, prepared, server_cpu_s, serving

CATCH_UP_GUARD_S = 600.0


def pending(path: Path) -> int:
    """Finished runs without a result, through the store's own read (at most 10,000 counted)."""
    store = SqliteStore.open(path)
    try:
        return sum(len(ids) for _, ids in store.evals.pending_evals("", "9999", 10_000))
    finally:
        store.close()


def wait_judged(path: Path) -> float:
    """Seconds until no run waits for its eval."""
    start = time.monotonic()
    while pending(path):
        if time.monotonic() - start > CATCH_UP_GUARD_S:
            raise SystemExit("the judge did not catch up")
        time.sleep(0.2)
    return time.monotonic() - start


def one_side(workers: int, stored: int, senders: int, batches: int, bursts: int
             ) -> tuple[float, float, float | None]:
    """Events/s over `bursts` bursts, server CPU ms per batch during them, and (judge on) the
    median seconds to catch up after one. Each burst is followed by its catch-up, so none
    queues more runs than the worker pool holds (10,000: past that they wait for the sweep)."""
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        db = data_dir / "bench.db"
        raw = prepared(data_dir, stored)
        with serving(data_dir, workers) as (url, pid):
            if workers:
                wait_judged(db)  # the startup sweep judges the prefill
            measure(url, raw, senders, 10)  # warm up
            if workers:
                wait_judged(db)
            seconds = cpu_s = 0.0
            catch_ups = []
            for _ in range(bursts):
                cpu = server_cpu_s(pid)
                seconds += senders * batches * BATCH / measure(url, raw, senders, batches)
                cpu_s += server_cpu_s(pid) - cpu
                if workers:
                    catch_ups.append(wait_judged(db))
    events = bursts * senders * batches * BATCH
    return (events / seconds, cpu_s / (bursts * senders * batches) * 1000,
            statistics.median(catch_ups) if workers else None)


def spread(values: list[float]) -> str:
    return f"{min(values):,.2f} / {statistics.median(values):,.2f} / {max(values):,.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stored", type=int, default=10_000)
    parser.add_argument("--senders", type=int, default=4)
    parser.add_argument("--bursts", type=int, default=3, help="bursts per side and round")
    parser.add_argument("--batches-per-sender", type=int, default=100,
                        help="each queues 17 evals per batch: keep them under the queue's 10,000")
    args = parser.parse_args()
    ratios: list[float] = []
    cpu_ratios: list[float] = []
    catch_ups: list[float] = []
    for round_ in range(args.rounds):
        sides: dict[int, tuple[float, float]] = {}
        for workers in ((2, 0) if round_ % 2 == 0 else (0, 2)):
            rate, cpu_ms, catch_up = one_side(workers, args.stored, args.senders,
                                              args.batches_per_sender, args.bursts)
            sides[workers] = rate, cpu_ms
            after = "" if catch_up is None else f"; all judged {catch_up:.1f} s after a burst (median)"
            print(f"round {round_ + 1}, judge {'on ' if workers else 'off'}: {rate:>7,.0f} events/s"
                  f" (server CPU {cpu_ms:.2f} ms/batch){after}", flush=True)
            if catch_up is not None:
                catch_ups.append(catch_up)
        ratios.append(sides[2][0] / sides[0][0])
        cpu_ratios.append(sides[2][1] / sides[0][1])
    print(f"ingest events/s with the judge on / off (min / median / max of {args.rounds}): "
          f"{spread(ratios)}x")
    print(f"server CPU per batch during the burst, judge on / off: {spread(cpu_ratios)}x")
    print(f"seconds to judge every run after the burst: {spread(catch_ups)}")


if __name__ == "__main__":
    main()
