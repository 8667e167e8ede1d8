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
import heapq
import hmac
import json
import math
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

from bench import _config, _http

TIMEOUT = 60.0
MAX_AGE_S = 300
"""How old (or how far in the future) a signed call may be, in seconds."""


class ReuseError(Exception):
    """A publish or a call that did not work; the message says why."""


def _request(method: str, url: str, key: str, body: Optional[dict[str, Any]] = None
             ) -> _http.Reply:
    """The server's reply, its JSON always an object (any other JSON as its ``output``)."""
    try:
        reply = _http.request(method, url, key, body, timeout=TIMEOUT)
    except ConnectionError as exc:
        raise ReuseError(str(exc)) from exc
    return reply if isinstance(reply.payload, dict) else replace(reply, payload={"output": reply.payload})


def _failure(reply: _http.Reply) -> ReuseError:
    message = reply.error
    if reply.status == 401:
        message = "the server rejected the key (401); check BENCH_KEY or run `bench login`"
    elif reply.status == 429 and reply.retry_after:
        message = f"{message} (429; retry after {reply.retry_after} s)"
    else:
        message = f"{message} ({reply.status})"
    return ReuseError(f"{message}: {reply.fields}" if reply.fields and reply.status == 422 else message)


def _key(server: str) -> str:
    key = _config.api_key(None, server)
    if not key:
        raise ReuseError(f"no key: set BENCH_KEY or run `bench login --endpoint {server}`")
    return key


def key_login(server: str, key: str) -> str:
    """The login the key acts for."""
    reply = _request("GET", f"{server}/api/usage?limit=1", key)
    if reply.status != 200 or not isinstance(reply.payload.get("login"), str):
        raise _failure(reply)
    return str(reply.payload["login"])


PRIVACY_FIELDS = ("visibility", "hide_inputs", "hide_outputs")


def read_privacy(root: Path) -> dict[str, Any]:
    """The ``privacy`` part of ``bench.agent.json`` (``visibility``, ``hide_inputs``,
    ``hide_outputs``): what ``bench publish`` sets first. Empty when there is none."""
    try:
        manifest = json.loads((root / _config.MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    privacy = manifest.get("privacy") if isinstance(manifest, dict) else None
    if privacy is None:
        return {}
    if not isinstance(privacy, dict) or set(privacy) - set(PRIVACY_FIELDS):
        raise ReuseError(f"\"privacy\" in {_config.MANIFEST} takes only "
                         f"{', '.join(PRIVACY_FIELDS)}")
    return privacy


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
    privacy = read_privacy(root)
    key = _key(server)
    login = key_login(server, key)
    if privacy:  # content is hidden until the owner shows it: here, by saying so in the file
        reply = _request("PATCH", f"{server}/api/agents/{login}/{slug}", key, privacy)
        if reply.status == 404:
            raise ReuseError(f"{login}/{slug} does not exist yet: send it a first task "
                             "(`bench test`)")
        if reply.status != 200:
            raise _failure(reply)
    reply = _request("PUT", f"{server}/api/agents/{login}/{slug}/capability", key, card)
    if reply.status == 404:
        raise ReuseError(f"{login}/{slug} does not exist yet: send it a first task (`bench test`)")
    if reply.status != 200:
        raise _failure(reply)
    published: dict[str, Any] = reply.payload  # an object: _request makes it one
    return published


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
    reply = _request("POST", f"{server}/api/agents/{path}/invoke", _key(server), body)
    if reply.status != 200:
        raise _failure(reply)
    return reply.payload.get("output")


class _SeenCalls:
    """Call ids verified within their signature's lifetime, so a replay is refused (per
    process: a receiver with many processes keeps its own store).

    An entry is kept for as long as a replay of its call could still verify, however many
    other calls come meanwhile, and dropped once its signature has expired. Only calls whose
    signature verified are recorded, so what it holds is bounded by the calls Bench really
    made to this agent within one signature lifetime (``max_age_s``)."""

    GRACE_S = 60.0
    """Entries are kept this long past expiry: a clock stepped back (NTP) revives no replay."""

    def __init__(self) -> None:
        self._until: dict[str, float] = {}
        self._expiry: list[tuple[float, str]] = []
        """A heap of (until, key): the first to expire on top."""
        self._lock = threading.Lock()

    def first_time(self, key: str, until: float, now: float) -> bool:
        with self._lock:
            expiry, until_of = self._expiry, self._until
            while expiry and expiry[0][0] < now - self.GRACE_S:
                ends, old = heapq.heappop(expiry)
                if until_of.get(old) == ends:
                    del until_of[old]
            if until_of.get(key, -math.inf) >= now:
                return False
            until_of[key] = until
            heapq.heappush(expiry, (until, key))
            return True


_SEEN = _SeenCalls()


def verify_invocation(secret: str, headers: Mapping[str, str], body: bytes, *,
                      max_age_s: int = MAX_AGE_S, now: Optional[float] = None,
                      path: Optional[str] = None, refuse_replays: bool = True) -> Optional[str]:
    """The calling login if ``headers`` carry Bench's valid, recent signature of ``body`` for
    ``secret``; None otherwise (never raises).

    A signature covers the call's id and the path it was sent to: give ``path`` (the request's
    path and query) to refuse a call recorded for another path, and a call id seen before
    within ``max_age_s`` is refused as a replay unless ``refuse_replays`` is False. Older
    servers' ``v1`` signatures (no call id, no path) are still accepted."""
    lower = {str(k).lower(): str(v) for k, v in headers.items()}
    timestamp, caller = lower.get("x-bench-timestamp", ""), lower.get("x-bench-caller", "")
    agent, presented = lower.get("x-bench-agent", ""), lower.get("x-bench-signature", "")
    call_id, signed_path = lower.get("x-bench-call", ""), lower.get("x-bench-path", "")
    if not (timestamp.isdigit() and caller and agent and presented):
        return None
    clock = time.time() if now is None else now
    if abs(clock - int(timestamp)) > max_age_s:
        return None
    fields: tuple[str, ...]
    if presented.startswith("v2="):
        if not call_id or not signed_path or (path is not None and path != signed_path):
            return None
        fields = ("v2", timestamp, call_id, caller, agent, signed_path)
    else:
        fields = ("v1", timestamp, caller, agent)
    message = "".join(f"{field}\n" for field in fields).encode() + body
    expected = f"{fields[0]}=" + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode(), presented.encode()):
        return None
    if refuse_replays and fields[0] == "v2":
        seen = hashlib.sha256(f"{secret}\n{call_id}".encode()).hexdigest()
        if not _SEEN.first_time(seen, int(timestamp) + max_age_s, clock):
            return None
    return caller
