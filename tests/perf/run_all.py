"""`make bench`: the benchmarks that compare side by side, each at a size that takes a minute or
so, their ratios gathered at the end.

    python tests/perf/run_all.py [--full] [--only NAME ...]

Each script runs in its own process, as `python tests/perf/<script>.py` would, from this
checkout; what one prints streams through, and the lines with its ratios are repeated in the
digest. `--full` runs each at its own default size (tens of minutes: a million events stored).
A script that fails is named in the digest and the exit status is 1; the others still run. A
goal missed (`cold_start.py` exits 1 when a handler imports slower than its goal) is named in the
digest as such: a verdict on this machine at this load, not a failure of the run.
Scripts that need something from outside (Phoenix for `otlp.py`, another checkout for
`live_push_latency.py` and `--against`, the original client from the package registry for
`sdk_overhead.py --sdks ours,0.1.3`) run on their own, as their docstrings say.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
"""Not `bench.py`: a script here runs with this folder first on its path, where a module of that
name would hide the SDK's `bench` package."""


@dataclass(frozen=True)
class Benchmark:
    name: str
    compares: str
    quick: tuple[str, ...]
    """Arguments for the quick run (`--full`: none, the script's defaults)."""
    ratios: str
    """A pattern matching the lines that carry the ratios."""
    missed: str = ""
    """What the script's exit status 1 means when it is a verdict rather than a failure."""


BENCHMARKS = (
    Benchmark("judge_yield", "ingest with the local judge on against off, alternating rounds",
              ("--rounds", "3"), r"judge on / off"),
    Benchmark("ingest", "ingest's cost per event with 100k events stored against 10k",
              ("--stored", "10000", "100000", "--batches-per-sender", "100"), r"cost per event at"),
    Benchmark("sdk_overhead", "the SDK's cost on the agent's thread against OpenTelemetry's",
              ("--tasks", "2000", "--sdks", "ours,otel"), r"ours / "),
    Benchmark("cold_start", "each Lambda handler's import against `import fastapi`",
              ("--runs", "3"), r"^\w+\s+\d+ms\s+\d+ms|import fastapi alone",
              missed="a handler imports slower than its goal"),
    Benchmark("run_list", "ingest with the runs list's search and sort indexes against without",
              ("--events", "70000", "--repeats", "10", "--ingest-events", "35000"),
              r"^\s+(neither|sort indexes only|search index only|both)"),
)


def run(benchmark: Benchmark, full: bool) -> tuple[str, float, list[str]]:
    """How the script ended ("" if well, else why), its seconds and its ratio lines; its
    output streamed through."""
    args = [sys.executable, str(HERE / f"{benchmark.name}.py"), *(() if full else benchmark.quick)]
    print(f"\n== {benchmark.name}: {benchmark.compares}\n   {' '.join(args[1:])}", flush=True)
    start = time.monotonic()
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               cwd=HERE.parents[1])
    pattern = re.compile(benchmark.ratios)
    ratios = []
    crashed = False
    assert process.stdout is not None
    for line in process.stdout:
        print(line, end="", flush=True)
        crashed |= line.startswith("Traceback")
        if pattern.search(line):
            ratios.append(line.rstrip())
    status = process.wait()
    seconds = time.monotonic() - start
    if status == 0:
        return "", seconds, ratios
    if status == 1 and benchmark.missed and not crashed:
        return f"goal missed: {benchmark.missed}", seconds, ratios
    return f"FAILED (exit {status})", seconds, ratios


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="each script at its default size")
    parser.add_argument("--only", nargs="+", choices=[b.name for b in BENCHMARKS])
    args = parser.parse_args()
    chosen = [b for b in BENCHMARKS if not args.only or b.name in args.only]
    results = [(b, *run(b, args.full)) for b in chosen]
    print("\n== digest")
    for benchmark, ended, seconds, ratios in results:
        print(f"{benchmark.name} ({seconds:.0f} s){'  ' + ended if ended else ''}")
        for line in ratios:
            print(f"    {line}")
    return 1 if any(ended.startswith("FAILED") for _, ended, _, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
