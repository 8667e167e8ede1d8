"""Where bench_core's data from the repository's `benchmarks/` folder is: the judge's prompts
and the benchmark suites live there once. Run from the repository, that folder is read; an
installed bench_core (the Lambda layer, the wheel) holds a copy its build put in the package
(scripts/bundle_data.py), read instead."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
REPOSITORY_BENCHMARKS = PACKAGE.parents[2] / "benchmarks"
"""`benchmarks/` beside `layers/core/bench_core` in a checkout; absent once installed."""


def benchmarks_data(name: str, packaged: str) -> Path:
    """`benchmarks/<name>` of the repository when running from it, else `bench_core/<packaged>`
    (where the build copied it); the packaged path when neither exists, for a clear error."""
    in_repository = REPOSITORY_BENCHMARKS / name
    return in_repository if in_repository.exists() else PACKAGE / packaged
