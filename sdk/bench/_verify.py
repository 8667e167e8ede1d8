"""``bench test`` and the checks of ``bench doctor``: one request each, answered now.

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
        return str(getattr(exc, "reason", None) or exc)


def key_problem(server: str, key: str) -> Optional[str]:
    """None if ``server`` accepts ``key``, else a sentence saying what is wrong; stores nothing.

    The key is checked the way a batch's is, by ``POST /ingest``, with an empty body: the
    server authenticates the key first (401 if it is unknown or revoked), then refuses the
    body (422), so nothing is written."""
    try:
        status, payload = _post_ingest(server, key, {})
    except VerifyError as exc:
        return str(exc)
    if status == 422:
        return None
    if status == 401:
        return (f"The server at {server} rejected the key (401: {payload.get('error', 'invalid key')}); "
                f"set BENCH_KEY to a key from its dashboard or run `bench login --endpoint {server}`.")
    return f"The server at {server} answered {status} when checking the key: {payload.get('error', '')}".strip()


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
    status, payload = _post_ingest(server, key, body)
    if status == 401:
        raise VerifyError("the server rejected the key (401); check BENCH_KEY or run `bench login`")
    if status == 403:
        raise VerifyError(f"this key may not write agent {slug!r} (403)")
    if not 200 <= status < 300:
        detail = "; ".join(str(d) for d in payload.get("detail") or [])
        raise VerifyError(f"the server answered {status}: {payload.get('error', '')} {detail}".strip())
    return payload


def _post_ingest(server: str, key: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """POST ``body`` to the server's ``/ingest`` with ``key``: the status and the JSON answer."""
    headers = {"Content-Type": "application/json", "X-Bench-Key": key, "User-Agent": f"{SDK_NAME}/{__version__}"}
    try:
        reply = UrllibTransport().post(server + "/ingest", json.dumps(body).encode(), headers, TIMEOUT)
    except OSError as exc:
        raise VerifyError(f"cannot reach {server}: {getattr(exc, 'reason', exc)}") from exc
    try:
        payload = json.loads(reply.body or b"{}")
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        payload = {"error": reply.body[:200].decode("utf-8", "replace")}
    return reply.status, payload
