"""``agent.feedback(...)``: what people said of a run, sent in the background.

The caller's whole cost is a ``deque.append``. A daemon thread of its own, started on the first
feedback (importing ``bench`` starts nothing), posts each to
``POST /api/agents/{login}/{slug}/runs/{run}/feedback`` with the agent's key, having asked the
server once who the key belongs to (``GET /api/usage?limit=1``). Each feedback carries an id
chosen here, so a resend keeps one on the server: network errors, 408, 425, 429 and 5xx are
retried with a backoff doubling to 30 s; other 4xx answers are final, said once per status.

Feedback does not ride the event sender's batches (it names its run in the URL and the server
keeps it apart from events), but it waits for them: before each post the events queued so far
(the run it is about among them) are delivered first, so the server knows the run.

What is undelivered at exit (or ``shutdown``) goes to the spool (``bench._spool``, under a key
id of its own), and the next process that sends feedback with the same key sends it first; a
crash between taking a spooled file and delivering it loses that file's feedback.
"""

from __future__ import annotations

import atexit
import json
import logging
import threading
import time
from collections import deque
from typing import Any, Callable, Optional
from urllib.parse import quote

from bench import _http
from bench._sender import EXIT_FLUSH_TIMEOUT
from bench._spool import Spool, open_spool

logger = logging.getLogger("bench")

RETRYABLE = frozenset({408, 425, 429})
BACKOFF_BASE = 0.5
BACKOFF_CAP = 30.0
REQUEST_TIMEOUT = 10.0
MAX_WAITING = 1_000
"""Feedback held in memory; beyond it new feedback is dropped, with one warning."""


class FeedbackSender:
    """One agent's feedback queue and the thread that delivers it."""

    def __init__(self, server: str, api_key: str, slug: str, *,
                 settle_events: Callable[[Optional[float]], bool],
                 spool_dir: Optional[str] = None, spool_max_mb: Optional[float] = None) -> None:
        self._settle_events = settle_events
        """Waits for the agent's queued events (its runs) to reach the server first."""
        self._server = server
        self._key = api_key
        self._slug = slug
        self._spool: Optional[Spool] = open_spool(server + "/api/feedback", api_key, spool_dir,
                                                  spool_max_mb)
        self._queue: deque[dict[str, Any]] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._thread: Optional[threading.Thread] = None
        self._login: Optional[str] = None
        self._warned: set[Any] = set()

    # ── caller side: cheap, never raises ──

    def put(self, run_id: str, body: dict[str, Any]) -> None:
        if self._stop.is_set():
            return
        if len(self._queue) >= MAX_WAITING:
            self._warn_once("full", "bench: too much feedback waiting; new feedback is dropped")
            return
        with self._lock:
            self._idle.clear()
            self._queue.append({"run_id": run_id, "body": body})
        self._start()
        self._wake.set()

    def flush(self, timeout: Optional[float]) -> bool:
        """Wait until everything queued is settled (delivered or given up)."""
        if self._thread is None:
            return not self._queue
        self._wake.set()
        return self._idle.wait(timeout)

    def shutdown(self, timeout: Optional[float]) -> bool:
        """Deliver what can be delivered within ``timeout``; spool the rest; stop."""
        if self._stop.is_set():
            return not self._queue
        delivered = self.flush(timeout)
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(1.0)
        self._spool_rest()
        return delivered

    # ── the thread ──

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="bench-feedback", daemon=True)
            self._thread.start()
        atexit.register(self.shutdown, EXIT_FLUSH_TIMEOUT)

    def _run(self) -> None:
        self._load_spooled()
        delay = 0.0
        while not self._stop.is_set():
            with self._lock:
                if not self._queue:
                    self._idle.set()
            if self._idle.is_set():
                self._wake.wait()
                self._wake.clear()
                continue
            item = self._queue[0]
            try:
                settled = self._send(item)
            except Exception as exc:  # noqa: BLE001 - the thread must outlive any bug
                self._warn_once(("internal", type(exc).__name__), f"bench: feedback error: {exc!r}")
                settled = True
            if settled:
                self._queue.popleft()
                delay = 0.0
                continue
            delay = min(BACKOFF_CAP, max(BACKOFF_BASE, delay * 2))
            self._wake.wait(delay)
            self._wake.clear()

    def _send(self, item: dict[str, Any]) -> bool:
        """Post one feedback; True once settled (delivered, or refused for good)."""
        self._settle_events(REQUEST_TIMEOUT)
        try:
            login = self._login or self._whoami()
            if login is None:
                return False
            url = (f"{self._server}/api/agents/{quote(login)}/{quote(self._slug)}/runs/"
                   f"{quote(item['run_id'], safe='')}/feedback")
            reply = _http.request("POST", url, self._key, item["body"], timeout=REQUEST_TIMEOUT)
        except ConnectionError:
            return False
        if reply.ok:
            return True
        if reply.status in RETRYABLE or reply.status >= 500:
            return False
        self._warn_once(("status", reply.status),
                        f"bench: the server refused feedback ({reply.status}): {reply.error}")
        return True

    def _whoami(self) -> Optional[str]:
        reply = _http.request("GET", f"{self._server}/api/usage?limit=1", self._key,
                              timeout=REQUEST_TIMEOUT)
        login = reply.payload.get("login") if isinstance(reply.payload, dict) else None
        if reply.ok and isinstance(login, str):
            self._login = login
            return login
        if not (reply.status in RETRYABLE or reply.status >= 500):
            self._warn_once(("whoami", reply.status),
                            f"bench: cannot send feedback ({reply.status}): {reply.error}")
        return None

    # ── the spool ──

    def _load_spooled(self) -> None:
        if self._spool is None:
            return
        for name in self._spool.waiting():
            claim = self._spool.claim(name)
            loaded = self._spool.load(claim) if claim is not None else None
            if claim is None or loaded is None:
                continue
            self._queue.extendleft(reversed([json.loads(line) for line in loaded.events]))
            self._spool.release(claim)

    def _spool_rest(self) -> None:
        left = list(self._queue)
        self._queue.clear()
        if not left or self._spool is None:
            return
        lines = [json.dumps(item, separators=(",", ":")).encode() for item in left]
        if self._spool.write(time.time_ns(), {"agent_slug": self._slug}, lines, 0) is None:
            self._warn_once("spool", f"bench: {len(left)} feedback could not be kept for later")

    def _warn_once(self, key: Any, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            logger.warning(message)
