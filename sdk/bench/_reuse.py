"""Authorized reuse from the SDK: ``bench publish``, ``bench call``, and ``verify_invocation``
for agents that take calls through Bench.

``bench publish`` sends the ``capability`` and ``invocation`` parts of ``bench.agent.json`` to
``PUT /api/agents/{login}/{slug}/capability``; the first publish answers with the agent's
invocation secret, shown once. ``bench call @login/slug --input JSON`` posts to
``/api/agents/{login}/{slug}/invoke`` and prints the agent's answer.

An agent checks that a call came through Bench, and from whom, with the secret::

    caller = bench.verify_invocation(os.environ["BENCH_INVOCATION_SECRET"], request.headers, body)
    if caller is None:
        return 401

Standard library only; every failure is a ``ReuseError`` with one clear sentence.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

from bench import _config
from bench._version import SDK_NAME, __version__

TIMEOUT = 60.0
MAX_AGE_S = 300
"""How old (or how far in the future) a signed call may be, in seconds."""


class ReuseError(Exception):
    """A publish or a call that did not work; the message says why."""


def _request(method: str, url: str, key: str, body: Optional[dict[str, Any]] = None
             ) -> tuple[int, dict[str, Any], Optional[str]]:
    """Status, JSON answer and Retry-After of one request to the Bench server."""
    import urllib.error
    import urllib.request

    headers = {"X-Bench-Key": key, "Accept": "application/json",
               "User-Agent": f"{SDK_NAME}/{__version__}"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as reply:  # noqa: S310 - the configured server
            status, raw, retry = reply.status, reply.read(), reply.headers.get("Retry-After")
    except urllib.error.HTTPError as error:
        with error:
            status, raw, retry = error.code, error.read(), error.headers.get("Retry-After")
    except OSError as exc:
        raise ReuseError(f"cannot reach {url.split('/api/')[0]}: {getattr(exc, 'reason', exc)}") from exc
    try:
        payload = json.loads(raw or b"{}")
    except ValueError:
        payload = {"error": raw[:200].decode("utf-8", "replace")}
    return status, payload if isinstance(payload, dict) else {"output": payload}, retry


def _failure(status: int, payload: dict[str, Any], retry: Optional[str]) -> ReuseError:
    message = str(payload.get("error") or f"HTTP {status}")
    details = [d for d in payload.get("detail") or [] if isinstance(d, dict)]
    fields = "; ".join(f"{'.'.join(str(p) for p in d.get('loc', []))}: {d.get('msg', '')}"
                       for d in details if d.get("msg"))
    if status == 401:
        message = "the server rejected the key (401); check BENCH_KEY or run `bench login`"
    elif status == 429 and retry:
        message = f"{message} (429; retry after {retry} s)"
    else:
        message = f"{message} ({status})"
    return ReuseError(f"{message}: {fields}" if fields and status == 422 else message)


def _key(server: str) -> str:
    key = _config.api_key(None, server)
    if not key:
        raise ReuseError(f"no key: set BENCH_KEY or run `bench login --endpoint {server}`")
    return key


def _login(server: str, key: str) -> str:
    status, payload, retry = _request("GET", f"{server}/api/usage?limit=1", key)
    if status != 200 or not isinstance(payload.get("login"), str):
        raise _failure(status, payload, retry)
    return str(payload["login"])


def read_card(root: Path) -> tuple[str, dict[str, Any]]:
    """The slug and the ``capability``/``invocation`` parts of ``bench.agent.json``."""
    path = root / _config.MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReuseError(f"no {_config.MANIFEST} here: run `bench init` first") from exc
    except ValueError as exc:
        raise ReuseError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(manifest, dict) or not isinstance(manifest.get("slug"), str):
        raise ReuseError(f"{path} has no slug; run `bench init --force`")
    if not isinstance(manifest.get("capability"), dict):
        raise ReuseError(f"{path} has no \"capability\" object to publish")
    card = {"capability": manifest["capability"],
            "invocation": manifest.get("invocation") or {"mode": "disabled"}}
    return manifest["slug"], card


def publish(server: str, root: Path) -> dict[str, Any]:
    """Publish the project's card; the server's answer (with the secret on first publish)."""
    slug, card = read_card(root)
    key = _key(server)
    login = _login(server, key)
    status, payload, retry = _request("PUT", f"{server}/api/agents/{login}/{slug}/capability",
                                      key, card)
    if status == 404:
        raise ReuseError(f"{login}/{slug} does not exist yet: send it a first task (`bench test`)")
    if status != 200:
        raise _failure(status, payload, retry)
    return payload


def call(server: str, agent: str, input_json: str, skill: Optional[str] = None) -> Any:
    """Call ``@login/slug`` through Bench with the JSON ``input_json``; the agent's answer."""
    path = agent.lstrip("@").strip("/")
    if path.count("/") != 1 or not all(path.split("/")):
        raise ReuseError(f"name the agent as @login/slug, not {agent!r}")
    try:
        value = json.loads(input_json)
    except ValueError as exc:
        raise ReuseError(f"--input is not valid JSON: {exc}") from exc
    body: dict[str, Any] = {"input": value}
    if skill:
        body["skill"] = skill
    status, payload, retry = _request("POST", f"{server}/api/agents/{path}/invoke",
                                      _key(server), body)
    if status != 200:
        raise _failure(status, payload, retry)
    return payload.get("output")


def verify_invocation(secret: str, headers: Mapping[str, str], body: bytes, *,
                      max_age_s: int = MAX_AGE_S, now: Optional[float] = None) -> Optional[str]:
    """The calling login if ``headers`` carry Bench's valid, recent signature of ``body`` for
    ``secret``; None otherwise (never raises)."""
    lower = {str(k).lower(): str(v) for k, v in headers.items()}
    timestamp, caller = lower.get("x-bench-timestamp", ""), lower.get("x-bench-caller", "")
    agent, presented = lower.get("x-bench-agent", ""), lower.get("x-bench-signature", "")
    if not (timestamp.isdigit() and caller and agent and presented):
        return None
    if abs((time.time() if now is None else now) - int(timestamp)) > max_age_s:
        return None
    message = f"v1\n{timestamp}\n{caller}\n{agent}\n".encode() + body
    expected = "v1=" + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
    return caller if hmac.compare_digest(expected.encode(), presented.encode()) else None
