"""``bench login``: device-style sign-in, so no key is ever typed into or stored in a repo.

Protocol (after RFC 8628, JSON bodies):

1. ``POST {server}/api/cli/device/code`` -> ``{"device_code", "user_code", "verification_uri",
   "verification_uri_complete"?, "interval", "expires_in"}``
2. The user opens the URI in a signed-in browser and approves the code.
3. ``POST {server}/api/cli/device/token`` with ``{"device_code"}`` until it answers 200
   ``{"key": "bk_…", "login": "…"}``; meanwhile 400 ``{"error": "authorization_pending"}``,
   ``"slow_down"`` (poll less often), ``"access_denied"`` or ``"expired_token"``.

The key goes to the user's config directory (see ``_credentials``), where the SDK finds it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from bench._credentials import store_key
from bench._transport import UrllibTransport
from bench._version import SDK_NAME, __version__


class LoginError(Exception):
    """Sign-in could not complete; the message says why."""


@dataclass
class LoginResult:
    login: Optional[str]
    path: Path


def _post(server: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Type": "application/json", "User-Agent": f"{SDK_NAME}/{__version__}"}
    try:
        reply = UrllibTransport().post(server + path, json.dumps(body).encode(), headers, 10.0)
    except OSError as exc:
        raise LoginError(f"cannot reach {server}: {getattr(exc, 'reason', exc)}") from exc
    try:
        payload = json.loads(reply.body or b"{}")
    except ValueError:
        payload = {}
    return reply.status, payload if isinstance(payload, dict) else {}


def device_login(
    server: str, show: Callable[[str, str], None], sleep: Callable[[float], None] = time.sleep
) -> LoginResult:
    """Run the device flow; ``show(url, user_code)`` tells the user where to approve."""
    status, start = _post(server, "/api/cli/device/code", {"client": SDK_NAME})
    if status == 404:
        raise LoginError(f"{server} does not offer device login (404)")
    if status != 200 or "device_code" not in start:
        raise LoginError(f"{server} answered {status} when starting login: {start.get('error', '')}".strip())
    show(start.get("verification_uri_complete") or start["verification_uri"], start.get("user_code", ""))
    interval = float(start.get("interval", 5))
    deadline = time.monotonic() + float(start.get("expires_in", 600))
    while time.monotonic() < deadline:
        sleep(interval)
        status, answer = _post(server, "/api/cli/device/token", {"device_code": start["device_code"]})
        if status == 200 and isinstance(answer.get("key"), str):
            return LoginResult(answer.get("login"), store_key(server, answer["key"], answer.get("login")))
        error = answer.get("error")
        if error == "slow_down":
            interval += 5
        elif error != "authorization_pending":
            raise LoginError(f"login failed: {error or status}")
    raise LoginError("login code expired before it was approved; run `bench login` again")
