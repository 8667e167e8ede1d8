"""Ingest against another checkout: events per second of the server's CPU through `POST /ingest`
(SQLite), this checkout's server and another's (say, a `git worktree` of main) side by side, in
alternating rounds, at each batch size.

    python tests/perf/ingest_against.py DIR [--batch 50 500] [--rounds 5] [--stored 10000]
                                            [--events-per-sender 5000] [--senders 4]

Not a test: the numbers depend on the machine. Each side of each round starts its own server
(no eval workers: the judge is measured by `judge_yield.py`) over a fresh database of `--stored`
events, which that side's own code writes, and sends the same number of events in batches of
each size from `--senders` processes. The figure compared is events per second of the server's
CPU (user + system, all threads), which a shared machine moves far less than events per second
of the wall clock; both are printed, with min / median / max of this side's over the other's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ingest import measure, on_path, server_cpu_s, serving, spread

HERE = Path(__file__).resolve().parent
PREFILL = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
           "from ingest import prepared; print(prepared(Path(sys.argv[2]), int(sys.argv[3])))")
"""Run with the other checkout first on the path: its code writes its own database."""


def one_side(checkout: Path | None, stored: int, senders: int, batch: int, events: int
             ) -> tuple[float, float]:
    """Events per server CPU-second and per second, for one side at one batch size."""
    batches = max(1, events // batch)
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        raw = subprocess.run([sys.executable, "-c", PREFILL, str(HERE), tmp, str(stored)],
                             env={**os.environ, **on_path(checkout)}, check=True,
                             capture_output=True, text=True).stdout.strip().splitlines()[-1]
        with serving(data_dir, 0, checkout) as (url, pid):
            measure(url, raw, senders, max(2, batches // 10), batch)  # warm up
            cpu = server_cpu_s(pid)
            rate = measure(url, raw, senders, batches, batch)
            cpu_s = server_cpu_s(pid) - cpu
    return senders * batches * batch / cpu_s, rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("against", type=Path, help="the other checkout (its layers/core)")
    parser.add_argument("--batch", type=int, nargs="+", default=[50, 500])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--stored", type=int, default=10_000)
    parser.add_argument("--senders", type=int, default=4)
    parser.add_argument("--events-per-sender", type=int, default=5000)
    args = parser.parse_args()
    other = args.against.resolve()
    for batch in args.batch:
        per_cpu: dict[str, list[float]] = {"this": [], "other": []}
        ratios: list[float] = []
        wall: list[float] = []
        for round_ in range(args.rounds):
            sides: dict[str, tuple[float, float]] = {}
            for name in (("this", "other") if round_ % 2 == 0 else ("other", "this")):
                sides[name] = one_side(None if name == "this" else other, args.stored,
                                       args.senders, batch, args.events_per_sender)
                per_cpu[name].append(sides[name][0])
                print(f"batch {batch}, round {round_ + 1}, {name:>5}: {sides[name][0]:>7,.0f} "
                      f"events per server CPU-second, {sides[name][1]:>7,.0f} events/s",
                      flush=True)
            ratios.append(sides["this"][0] / sides["other"][0])
            wall.append(sides["this"][1] / sides["other"][1])
        print(f"batch {batch}: events per server CPU-second, this / other (min / median / max "
              f"of {args.rounds}): {spread(ratios)}x; events/s {spread(wall)}x; this "
              f"{spread([v / 1000 for v in per_cpu['this']])}k, other "
              f"{spread([v / 1000 for v in per_cpu['other']])}k", flush=True)


if __name__ == "__main__":
    main()
