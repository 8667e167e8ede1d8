"""The cyclic garbage collector held off while one request builds a big answer and drops it.

A run's JSON or page makes some thirty thousand containers (decoded tasks, the tree, the
views) that live until the answer is written and then all go at once, freed by reference
counting: none is in a cycle. Left running, the collector, which counts allocations and not
garbage, scans them dozens of times while they are built and moves them up its generations
for nothing: a tenth of such a request's time, and now and then a full collection that
triples it (tests/perf/runs.py). Held off, it finds next to nothing to do when it resumes,
since what the request made is gone by then. Cycles a request leaves (an exception's
traceback) wait for the next collection; nothing else changes. `paused` must therefore end
after the answer is dropped: wrap a function that returns only the encoded answer.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """The collector off meanwhile, and back on after if it was on (requests that overlap in
    threads leave it on once the first of them is done)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
