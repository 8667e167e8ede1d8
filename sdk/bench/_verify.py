"""``bench test`` and the reachability check of ``bench doctor``: one request, answered now.

These run in the foreground on purpose (the user waits for the answer), so they post directly
instead of going through the background sender, and turn every failure into one clear sentence.
"""

from __future__ import annotations

import json
import time
from typing import Any, Optional

from bench._client import _uid
from bench._serialize import format_ts
from bench._transport import UrllibTransport
from bench._version import SDK_NAME, __version__

TIMEOUT = 10.0


class VerifyError(Exception):
    """The server could not be reached or refused the verification task."""


def reachable(server: str) -> Optional[str]:
    """None if something answers HTTP at ``server``, else why not."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(server + "/", timeout=5):  # noqa: S310 - user-configured URL
            return None
    except urllib.error.HTTPError:
        return None
    except (OSError, ValueError) as exc:
        return getattr(exc, "reason", None) and str(exc.reason) or str(exc)


def send_verification_task(server: str, key: str, slug: str, display_name: Optional[str],
                           framework: Optional[str]) -> dict[str, Any]:
    """Send one safe, self-describing task and return the server's JSON answer."""
    task_id, now = _uid(), format_ts(time.time())
    common = {"ts": now, "task_id": task_id, "parent_task_id": None, "name": "bench.setup.verify"}
    body = {
        "agent_slug": slug, "display_name": display_name, "model": None, "framework": framework,
        "architecture": None, "tools": None, "sdk": {"name": SDK_NAME, "version": __version__},
        "events": [
            {"id": _uid(), "kind": "task.start", **common, "input": {"source": "bench test", "safe_test": True}},
            {"id": _uid(), "kind": "task.end", **common, "status": "success", "output": {"connected": True},
             "duration_ms": 1, "cost_usd": 0, "data": None},
        ],
    }
    headers = {"Content-Type": "application/json", "X-Bench-Key": key, "User-Agent": f"{SDK_NAME}/{__version__}"}
    try:
        reply = UrllibTransport().post(server + "/ingest", json.dumps(body).encode(), headers, TIMEOUT)
    except OSError as exc:
        raise VerifyError(f"cannot reach {server}: {getattr(exc, 'reason', exc)}") from exc
    try:
        payload = json.loads(reply.body or b"{}")
    except ValueError:
        payload = {"error": reply.body[:200].decode("utf-8", "replace")}
    if reply.status == 401:
        raise VerifyError("the server rejected the key (401); check BENCH_KEY or run `bench login`")
    if reply.status == 403:
        raise VerifyError(f"this key may not write agent {slug!r} (403)")
    if not 200 <= reply.status < 300:
        detail = "; ".join(str(d) for d in payload.get("detail") or [])
        raise VerifyError(f"the server answered {reply.status}: {payload.get('error', '')} {detail}".strip())
    return payload
