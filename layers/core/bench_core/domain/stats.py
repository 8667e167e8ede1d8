"""Counters that are cheap to update on ingest and enough to render any page without a scan.

The latency histogram has fixed, log-spaced buckets (four per doubling, about 19% wide) from 1 ms
to 2**22 ms (70 minutes), plus an underflow and an overflow bucket. Fixed edges make histograms
mergeable by adding counts, which is what lets DynamoDB keep them with atomic `ADD`s.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

STEPS_PER_DOUBLING = 4
TOP_EXPONENT = 22
BUCKETS = STEPS_PER_DOUBLING * TOP_EXPONENT + 2  # underflow + 88 log buckets + overflow
Z_95 = 1.959963984540054


def bucket_index(ms: float) -> int:
    """The bucket a duration falls in: 0 is below 1 ms, the last one is 2**22 ms and above."""
    if not ms >= 1:  # also catches NaN
        return 0
    i = int(math.floor(math.log2(ms) * STEPS_PER_DOUBLING)) + 1
    return min(i, BUCKETS - 1)


def bucket_bounds(i: int) -> tuple[float, float]:
    if i <= 0:
        return 0.0, 1.0
    low = 2 ** ((i - 1) / STEPS_PER_DOUBLING)
    if i >= BUCKETS - 1:
        return low, math.inf
    return low, 2 ** (i / STEPS_PER_DOUBLING)


def bucket_value(i: int) -> float:
    """A representative duration for a bucket: its geometric middle (the low edge at the ends)."""
    low, high = bucket_bounds(i)
    if i <= 0:
        return 0.5
    if math.isinf(high):
        return low
    return math.sqrt(low * high)


def empty_histogram() -> list[int]:
    return [0] * BUCKETS


def merge(a: Sequence[int], b: Sequence[int]) -> list[int]:
    if len(a) == len(b) == BUCKETS:  # both whole (a stored one may be shorter): added in C
        return list(map(operator.add, a, b))
    return [x + y for x, y in zip(_padded(a), _padded(b), strict=True)]


def _padded(h: Sequence[int]) -> list[int]:
    return list(h) + [0] * (BUCKETS - len(h))


def percentile(hist: Sequence[int], q: float) -> float | None:
    """The q-th percentile (0-100) estimated from bucket counts; None for an empty histogram."""
    total = sum(hist)
    if total == 0:
        return None
    rank = max(1, math.ceil(q / 100 * total))
    seen = 0
    for i, count in enumerate(hist):
        seen += count
        if seen >= rank:
            return round(bucket_value(i), 1)
    return round(bucket_value(len(hist) - 1), 1)


def latency_summary(hist: Sequence[int]) -> dict[str, float | None]:
    return {"p50": percentile(hist, 50), "p95": percentile(hist, 95), "p99": percentile(hist, 99)}


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval for a success rate: honest at small n, unlike p ± z·se."""
    if n <= 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def rate(successes: int, n: int) -> float | None:
    return successes / n if n else None
