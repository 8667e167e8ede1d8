"""A key's share of the ingest routes: at most `per_second` requests a second per API key,
counted across every process (every Lambda instance) in the store.

API Gateway's route throttle (template.yaml `IngestRateLimit`) caps the whole deployment; this
keeps one runaway key from taking all of it. Each request adds one to the key's counter of the
current second (`AccountStore.count_hit`: on DynamoDB one `ADD` returning the new count, 1 WRU
on a small item of its own partition), so the price is one write a request, 0.02 WRU per event
at the SDK's 50-event batches. Past the limit the answer is 429 with `Retry-After` (the rest
of the second, rounded up), which the SDK honours before it sends again.
"""

from __future__ import annotations

from datetime import timedelta

from ..domain.errors import TooManyRequests
from ..domain.models import KeyRecord, iso
from . import AccountConcerns

WINDOW = timedelta(seconds=1)


def take_request(store: AccountConcerns, key: KeyRecord, per_second: int) -> None:
    """Count one request of `key` in this second, or refuse it (429) past `per_second`; 0
    counts nothing (no limit)."""
    if per_second <= 0:
        return
    now = store.clock.now()
    second = now.replace(microsecond=0)
    if store.accounts.count_hit(f"ingest:{key.key_hash}:{second:%Y%m%d%H%M%S}",
                                iso(second + WINDOW)) <= per_second:
        return
    raise TooManyRequests(
        f"over {per_second} requests a second with this API key; send fewer, larger batches "
        "or wait for the next second",
        [{"loc": ["header", "x-bench-key"], "msg": f"at most {per_second} requests a second"}],
        headers={"Retry-After": "1"})
