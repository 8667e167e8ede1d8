"""The key records `api_keys.authenticate` found lately, kept a moment per store, so a sender's
requests do not each read its key from the store (4% of ingest's time did).

A record is trusted for `FRESH_S` after it was read: a key revoked anywhere (another process,
another Lambda container, `bench-server keys revoke`) is refused within that, and at once by
the process that revoked it (`forget`). Only keys found are kept, at most `MAX_KEYS` of them, so
a stream of made-up keys costs a lookup each, as before, and no memory. Expiry (a temporary
key's) is still checked against the record on every request.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from weakref import WeakKeyDictionary

from ..domain.models import KeyRecord

FRESH_S = 0.5
"""How long a record read from the store is used without reading it again: revocation takes
effect within this, well inside the second promised."""
MAX_KEYS = 4096


class KeyCache:
    def __init__(self, fresh_s: float = FRESH_S, max_keys: int = MAX_KEYS) -> None:
        self.fresh_s = fresh_s
        self.max_keys = max_keys
        self._records: dict[str, tuple[float, KeyRecord]] = {}
        self._lock = threading.Lock()

    def get(self, key_hash: str) -> KeyRecord | None:
        """The record read for `key_hash` less than `fresh_s` ago, if any."""
        with self._lock:
            entry = self._records.get(key_hash)
        if entry is None or time.monotonic() - entry[0] >= self.fresh_s:
            return None
        return entry[1]

    def put(self, record: KeyRecord, read_at: float) -> None:
        """Keep `record` as the store answered it at `read_at` (monotonic)."""
        with self._lock:
            if len(self._records) >= self.max_keys:
                self._records.clear()
            self._records[record.key_hash] = (read_at, record)

    def touched(self, key_hash: str, when: str) -> None:
        """The key's use was just stamped `when`: the kept record says so (its age unchanged)."""
        with self._lock:
            entry = self._records.get(key_hash)
            if entry is not None:
                self._records[key_hash] = (entry[0], replace(entry[1], last_used_at=when))

    def forget(self, key_hash: str) -> None:
        with self._lock:
            self._records.pop(key_hash, None)


_CACHES: WeakKeyDictionary[object, KeyCache] = WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def cache_of(accounts: object) -> KeyCache:
    """The cache of one store's keys (its `accounts` concern): two stores in one process (the
    tests', a server's and the CLI's) never answer from each other's."""
    with _CACHES_LOCK:
        cache = _CACHES.get(accounts)
        if cache is None:
            cache = _CACHES[accounts] = KeyCache()
        return cache
