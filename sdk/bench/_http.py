"""One JSON request to the Bench server, for the CLI's commands that ask and wait for an answer
(``bench benchmark``, ``bench publish``, ``bench call``). The telemetry sender has its own
transport (``_transport``): it never waits on the server.

Standard library only; urllib is imported on first use, so importing ``bench`` stays cheap.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional

from bench._version import SDK_NAME, __version__


@dataclass(frozen=True)
class Reply:
    status: int
    payload: Any
    """The answer's JSON; ``{"error": <its first 200 characters>}`` when it is not JSON."""
    retry_after: Optional[str] = None

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def error(self) -> str:
        """The server's ``error`` sentence (``HTTP <status>`` if it gave none)."""
        error = self.payload.get("error") if isinstance(self.payload, dict) else None
        return str(error or f"HTTP {self.status}")

    @property
    def fields(self) -> str:
        """The fields the server's ``detail`` names, as ``loc: msg; ...`` ('' if none)."""
        detail = self.payload.get("detail") if isinstance(self.payload, dict) else None
        return "; ".join(f"{'.'.join(str(p) for p in d.get('loc', []))}: {d['msg']}"
                         for d in detail or [] if isinstance(d, dict) and d.get("msg"))


def request(method: str, url: str, key: Optional[str], body: Any = None, *,
            timeout: float) -> Reply:
    """Send ``body`` (as JSON, unless None) with the key; any HTTP status is a `Reply`, a
    network failure a ``ConnectionError`` naming the server."""
    import urllib.error
    import urllib.request

    headers = {"Accept": "application/json", "User-Agent": f"{SDK_NAME}/{__version__}"}
    if key:
        headers["X-Bench-Key"] = key
    data = None
    if body is not None:
        data = json.dumps(body).encode("utf-8")
        headers["Content-Type"] = "application/json"
    sent = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(sent, timeout=timeout) as reply:  # noqa: S310 - the configured server
            status, raw, retry = reply.status, reply.read(), reply.headers.get("Retry-After")
    except urllib.error.HTTPError as error:
        with error:
            status, raw, retry = error.code, error.read(), error.headers.get("Retry-After")
    except OSError as exc:
        server = url.split("/api/")[0]
        raise ConnectionError(f"cannot reach {server}: {getattr(exc, 'reason', exc)}") from exc
    try:
        payload = json.loads(raw or b"{}")
    except ValueError:
        payload = {"error": raw[:200].decode("utf-8", "replace")}
    return Reply(status, payload, retry)
