"""A boto3 client made on first use, once, whichever thread asks first: a process that never
pushes never pays for it, and pushes from several threads share one."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class LazyClient:
    def __init__(self, make: Callable[[], Any], client: Any = None) -> None:
        self._make = make
        self._client = client
        self._lock = threading.Lock()

    def get(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = self._make()
            return self._client
