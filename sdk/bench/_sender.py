"""Background delivery: the agent appends to a bounded queue, one daemon thread sends.

The caller's whole cost is a ``deque.append``: no encoding, no locks, no network. The thread
starts on the first event (importing ``bench`` starts nothing), batches by size and interval,
retries network errors, timeouts, 429 and 5xx with exponential backoff and jitter (honouring
``Retry-After``), and reports events it had to drop in a later batch. Event ids make every retry
safe: the server counts a replayed event once.
"""

from __future__ import annotations

import atexit
import email.utils
import gzip
import json
import logging
import os
import queue
import random
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Optional

from bench._privacy import Scrubber
from bench._serialize import encode_event, format_ts
from bench._transport import Response, Transport, UrllibTransport
from bench._version import SDK_NAME, __version__

logger = logging.getLogger("bench")

EXIT_FLUSH_TIMEOUT = 2.0
"""How long interpreter exit waits for queued events; a dead server must not hang the exit."""


@dataclass(frozen=True)
class SenderConfig:
    """Delivery tuning; the defaults suit almost everyone."""

    max_queue_size: int = 10_000
    """Events held in memory; beyond it new events are dropped and counted."""
    max_batch_size: int = 50
    """Send as soon as this many events wait (a backlog goes out in larger requests)."""
    flush_interval: float = 2.0
    """Seconds between sends when fewer than ``max_batch_size`` events wait."""
    max_request_events: int = 1_000
    max_request_bytes: int = 5_000_000
    """Uncompressed body size above which a batch is split into several requests (the server
    takes up to 1,000 events and 5 MiB; one that answers 413 gets the batch again in halves)."""
    max_in_flight: int = 4
    """Requests sent at once, so a backlog drains even from a server slow to answer."""
    gzip_min_bytes: int = 8_192
    request_timeout: float = 10.0
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    max_retry_after: float = 300.0
    max_server_error_attempts: int = 10
    """A batch the server keeps failing with 5xx is given up after this many attempts, so one
    poisoned batch cannot block delivery forever. Network errors and 429 retry without limit."""
    transport_factory: Callable[[], Transport] = UrllibTransport
    """Called once, on the sender thread (see ``bench._transport``)."""


class _Marker:
    """Placed in the queue by ``flush``; set once everything queued before it is settled."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = threading.Event()


class _Outcome:
    SENT = "sent"
    LOST = "lost"
    TOO_LARGE = "too_large"


class Sender:
    """Owns the queue and the thread for one agent (one ``agent_slug`` per batch)."""

    def __init__(
        self,
        *,
        url: str,
        api_key: str,
        meta: dict[str, Any],
        scrubber: Scrubber,
        config: SenderConfig,
    ) -> None:
        self._url = url
        self._headers = {
            "Content-Type": "application/json",
            "X-Bench-Key": api_key,
            "User-Agent": f"{SDK_NAME}/{__version__}",
        }
        self._meta = meta
        self._scrubber = None if scrubber.is_identity else scrubber
        self._cfg = config
        self._max_queue = config.max_queue_size
        self._batch_size = config.max_batch_size
        self._queue: deque[Any] = deque()
        self._reset_thread_state()
        self._dropped = 0
        self._warned: set[tuple[Any, ...]] = set()

    def _reset_thread_state(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._abort = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._transport: Optional[Transport] = None
        self._closed = False
        self._outbox: queue.Queue[Optional[list[bytes]]] = queue.Queue(maxsize=1)
        self._settled = threading.Condition()
        self._unsettled = 0

    # ── caller side: must stay cheap and must never raise ─────────────────────────────────

    def push(self, event: dict[str, Any]) -> None:
        """Queue one event, or count it as dropped when the queue is full or closed."""
        queue = self._queue
        waiting = len(queue)
        if waiting >= self._max_queue or self._closed:
            self._count_dropped(1)
            return
        queue.append(event)
        if self._thread is None:
            self._start()
        if waiting >= self._batch_size and not self._wake.is_set():
            self._wake.set()

    def flush(self, timeout: Optional[float]) -> bool:
        """Block until everything queued so far is delivered or given up; False on timeout."""
        if self._thread is None or not self._thread.is_alive():
            return not self._queue
        marker = _Marker()
        self._queue.append(marker)
        self._wake.set()
        return marker.done.wait(timeout)

    def shutdown(self, timeout: Optional[float]) -> bool:
        """Flush, then stop the thread; events still undelivered after ``timeout`` are lost."""
        delivered = self.flush(timeout)
        self._closed = True
        self._abort.set()
        self._wake.set()
        if not delivered:
            self._warn_once(("shutdown",), "bench: shutdown timed out; undelivered events are lost")
        return delivered

    def _count_dropped(self, n: int) -> None:
        with self._lock:
            self._dropped += n
        self._warn_once(("dropped",), "bench: event queue full or closed; dropping events (count reported later)")

    def _take_dropped(self) -> int:
        with self._lock:
            n, self._dropped = self._dropped, 0
        return n

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            thread = threading.Thread(target=self._run, name="bench-sender", daemon=True)
            self._thread = thread
        _register(self)
        thread.start()

    # ── sender thread ─────────────────────────────────────────────────────────────────────

    def _run(self) -> None:
        """The batcher: pops and encodes batches, hands them to the posters."""
        try:
            self._transport = self._cfg.transport_factory()
        except Exception as exc:  # noqa: BLE001 - e.g. the httpx extra is not installed
            self._warn_once(("transport",), f"bench: transport unavailable ({exc!r}); using the standard library")
            self._transport = UrllibTransport()
        posters = [
            threading.Thread(target=self._post_loop, name=f"bench-post-{i}", daemon=True)
            for i in range(self._cfg.max_in_flight)
        ]
        for poster in posters:
            poster.start()
        while not self._abort.is_set():
            self._wake.wait(self._cfg.flush_interval)
            self._wake.clear()
            try:
                self._drain()
            except Exception as exc:  # noqa: BLE001 - the thread must outlive any bug
                self._warn_once(("internal", type(exc).__name__), f"bench: sender error: {exc!r}")
        for _ in posters:
            self._outbox.put(None)  # posters lose what is left (abort is set), then stop
        for poster in posters:
            poster.join()
        self._lose_queue()
        self._transport.close()

    def _drain(self) -> None:
        queue_ = self._queue
        while queue_ and not self._abort.is_set():
            events: list[bytes] = []
            markers: list[_Marker] = []
            while queue_ and len(events) < self._cfg.max_request_events:
                item = queue_.popleft()
                if isinstance(item, _Marker):
                    markers.append(item)
                else:
                    events.append(self._encode(item))
            if events:
                self._hand_over(events)
            if markers:
                self._wait_settled()
                for marker in markers:
                    marker.done.set()

    def _hand_over(self, events: list[bytes]) -> None:
        """Give a batch to a free poster; waits (the queue absorbs events) while all are busy."""
        with self._settled:
            self._unsettled += 1
        while not self._abort.is_set():
            try:
                self._outbox.put(events, timeout=0.1)
                return
            except queue.Full:
                continue
        self._settle(events, lost=True)

    def _post_loop(self) -> None:
        """A poster: up to ``max_in_flight`` requests run at once, so server latency is hidden."""
        while True:
            events = self._outbox.get()
            if events is None:
                return
            try:
                self._deliver(events)
            except Exception as exc:  # noqa: BLE001
                self._warn_once(("internal", type(exc).__name__), f"bench: sender error: {exc!r}")
            self._settle(events)

    def _settle(self, events: list[bytes], lost: bool = False) -> None:
        if lost:
            self._lose(events, "bench: stopped before delivery")
        with self._settled:
            self._unsettled -= 1
            self._settled.notify_all()

    def _wait_settled(self) -> None:
        """Until every handed-over batch is delivered or given up (a flush marker needs it)."""
        with self._settled:
            while self._unsettled and not self._abort.is_set():
                self._settled.wait(0.1)

    def _encode(self, event: dict[str, Any]) -> bytes:
        ts = event.get("ts")
        if ts.__class__ is float:  # recorded as epoch seconds: formatting is the sender's job
            event["ts"] = format_ts(ts)
        if self._scrubber is not None:
            event = self._scrubber.scrub(event)
        return encode_event(event)

    def _deliver(self, events: list[bytes]) -> None:
        """Send in requests bounded by bytes; split a batch the server finds too large."""
        start = 0
        while start < len(events):
            size, end = 0, start
            while end < len(events) and (end == start or size + len(events[end]) < self._cfg.max_request_bytes):
                size += len(events[end]) + 1
                end += 1
            chunk = events[start:end]
            if self._post(chunk) == _Outcome.TOO_LARGE:
                if len(chunk) == 1:
                    self._lose(chunk, "the server rejected an event as too large (413)")
                else:
                    half = len(chunk) // 2
                    self._deliver(chunk[:half])
                    self._deliver(chunk[half:])
            start = end

    def _body(self, events: list[bytes], dropped: int) -> bytes:
        meta = dict(self._meta)
        if dropped:
            meta["dropped"] = dropped
        head = json.dumps(meta, separators=(",", ":"), default=str)
        return b"".join((head[:-1].encode(), b',"events":[', b",".join(events), b"]}"))

    def _post(self, events: list[bytes]) -> str:
        dropped = self._take_dropped()
        body = self._body(events, dropped)
        headers = self._headers
        if len(body) > self._cfg.gzip_min_bytes:
            body = gzip.compress(body, compresslevel=1)
            headers = {**headers, "Content-Encoding": "gzip"}
        attempt = server_errors = 0
        while not self._abort.is_set():
            delay: Optional[float] = None
            try:
                assert self._transport is not None
                reply = self._transport.post(self._url, body, headers, self._cfg.request_timeout)
            except Exception as exc:  # noqa: BLE001 - any network failure is retryable
                reason: tuple[Any, ...] = ("network", type(exc).__name__)
                detail = f"bench: cannot reach {self._url} ({exc!r}); retrying"
            else:
                if 200 <= reply.status < 300:
                    if attempt:
                        logger.info("bench: delivery to %s recovered", self._url)
                    return _Outcome.SENT
                if reply.status == 413:
                    self._count_dropped_back(dropped)
                    return _Outcome.TOO_LARGE
                reason = ("http", reply.status)
                detail = f"bench: ingest returned {reply.status}: {_error_text(reply)}"
                if reply.status >= 500:
                    server_errors += 1
                if reply.status != 429 and (reply.status < 500 or server_errors >= self._cfg.max_server_error_attempts):
                    self._lose(events, detail, dropped)
                    return _Outcome.LOST
                delay = _retry_after(reply, self._cfg.max_retry_after)
            self._warn_once(reason, detail)
            if delay is None:
                ceiling = min(self._cfg.backoff_cap, self._cfg.backoff_base * 2**attempt)
                delay = ceiling / 2 + random.uniform(0, ceiling / 2)
            attempt += 1
            self._abort.wait(delay)
        self._lose(events, "bench: stopped before delivery", dropped)
        return _Outcome.LOST

    def _count_dropped_back(self, n: int) -> None:
        if n:
            with self._lock:
                self._dropped += n

    def _lose(self, events: list[Any], why: str, dropped: int = 0) -> None:
        self._count_dropped_back(len(events) + dropped)
        self._warn_once(("lost", why), f"{why}; {len(events)} events not delivered")

    def _lose_queue(self) -> None:
        items = list(self._queue)
        self._queue.clear()
        remaining = [item for item in items if not isinstance(item, _Marker)]
        if remaining:
            self._lose(remaining, "bench: sender stopped")
        for item in items:
            if isinstance(item, _Marker):
                item.done.set()

    def _warn_once(self, key: tuple[Any, ...], message: str) -> None:
        if key in self._warned:
            logger.debug(message)
            return
        self._warned.add(key)
        logger.warning(message)


def _error_text(reply: Response) -> str:
    try:
        payload = json.loads(reply.body)
        return f"{payload.get('error')} {payload.get('detail') or ''}".strip()
    except (ValueError, AttributeError):
        return reply.body[:300].decode("utf-8", "replace")


def _retry_after(reply: Response, cap: float) -> Optional[float]:
    value = reply.retry_after
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return min(max(seconds, 0.0), cap)


# ── process-wide hooks, installed when the first sender starts ─────────────────────────────

_senders: weakref.WeakSet[Sender] = weakref.WeakSet()
_hooks_installed = False
_hooks_lock = threading.Lock()


def _register(sender: Sender) -> None:
    global _hooks_installed
    _senders.add(sender)
    with _hooks_lock:
        if _hooks_installed:
            return
        _hooks_installed = True
    atexit.register(_flush_all_at_exit)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_reset_after_fork)


def _flush_all_at_exit() -> None:
    """Give every sender one shared, bounded wait: exit must not hang on a dead server."""
    deadline = time.monotonic() + EXIT_FLUSH_TIMEOUT
    for sender in list(_senders):
        sender.shutdown(max(0.0, deadline - time.monotonic()))


def _reset_after_fork() -> None:
    """A forked child has no sender thread and may hold locks copied mid-use: start fresh.

    Events queued before the fork belong to the parent, which sends them.
    """
    for sender in list(_senders):
        sender._queue.clear()
        sender._reset_thread_state()
