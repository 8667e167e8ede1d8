"""Background delivery: the agent appends to a bounded queue, daemon threads send.

The caller's whole cost is a ``deque.append``: no encoding, no locks, no network. The batcher
thread starts on the first event (importing ``bench`` starts nothing), encodes batches by size
and interval and puts them in the outbox (``bench._outbox``), from which up to ``max_in_flight``
posters send them, oldest first, sharing one backoff: once the server answers again everything
waiting goes out. Network errors (a request cut off mid-way included), 408, 425, 429 and 5xx are
retried, honouring ``Retry-After``; other 4xx answers are final (an event too large for the
server is split off first), said once per status. Events dropped or given up are counted and
reported to the server with a later batch. Event ids make every resend safe: the server counts a
replayed event once.

What is still undelivered at exit (or ``shutdown``) goes to the spool (``bench._spool``); the
next process sending to the same endpoint with the same key sends it before its own events.
"""

from __future__ import annotations

import atexit
import email.utils
import gzip
import itertools
import json
import logging
import os
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

from bench._outbox import Batch, Outbox
from bench._privacy import Scrubber
from bench._serialize import encode_event, format_ts
from bench._spool import Claim, Spool, open_spool
from bench._transport import Response, Transport, UrllibTransport
from bench._version import SDK_NAME, __version__

logger = logging.getLogger("bench")

EXIT_FLUSH_TIMEOUT = 2.0
"""How long interpreter exit waits for queued events; a dead server must not hang the exit
(what is left goes to the spool)."""
STOP_WAIT = 1.0
"""How long ``shutdown`` waits for the batcher to put down the events it is encoding."""
RETRYABLE = frozenset({408, 425, 429})
"""4xx answers that may change (timeout, too early, slow down); 5xx are retried too."""


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
    """The shared backoff while the server fails: one probe after each delay (doubling, with
    jitter, up to the cap); a flush tries at once."""
    max_retry_after: float = 300.0
    max_server_error_attempts: int = 10
    """5xx answers after which a batch is split in halves; a single event is given up only
    once the server has accepted other requests since its first 5xx.

    Not a cap on 5xx attempts: a 5xx while nothing succeeds is an outage (a restart, a proxy
    answering 502/503), and an outage is retried without limit, like network errors and 429,
    however long it lasts (split batches lose nothing). A 5xx for one batch while others are
    accepted is that batch's own (a server bug on some content): without a limit it would be
    retried, and spooled, forever, so it is split until the event the server cannot take is
    found and given up, and the rest is delivered. Those retries do not back off the others."""
    spool_dir: Optional[str] = None
    """Where undelivered events wait at exit; None: ``BENCH_SPOOL_DIR``, else the user's cache
    directory (``~/.cache/bench/spool`` on Linux; see ``bench._spool``)."""
    spool_max_mb: Optional[float] = None
    """Bound of the spool directory; None: ``BENCH_SPOOL_MAX_MB``, else 50. 0 turns it off."""
    transport_factory: Callable[[], Transport] = UrllibTransport
    """Called once, on the sender thread (see ``bench._transport``)."""


class _Marker:
    """Placed in the queue by ``flush``; set once everything queued before it is settled."""

    __slots__ = ("done", "delivered")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.delivered = False

    def settle(self, delivered: bool) -> None:
        self.delivered = delivered
        self.done.set()


class Sender:
    """Owns the queue and the threads for one agent (one ``agent_slug`` per batch)."""

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
        self._spool: Optional[Spool] = open_spool(url, api_key, config.spool_dir, config.spool_max_mb)
        self._queue: deque[Any] = deque()
        self._reset_thread_state()
        self._dropped = 0
        self._warned: set[tuple[Any, ...]] = set()

    def _reset_thread_state(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._abort = threading.Event()
        self._stopped = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._transport: Optional[Transport] = None
        self._closed = False
        self._outbox = Outbox(capacity=self._cfg.max_in_flight + 1, backoff_base=self._cfg.backoff_base,
                              backoff_cap=self._cfg.backoff_cap)
        self._order = itertools.count()
        self._spooled_waiting: list[str] = []
        self._claims: list[Claim] = []

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
        """Block until everything queued so far is delivered or given up; False on timeout.

        A flush ends the backoff: the caller is waiting, so the server is tried at once."""
        if self._thread is None or not self._thread.is_alive():
            return not self._queue
        marker = _Marker()
        self._queue.append(marker)
        self._wake.set()
        self._outbox.kick()
        return marker.done.wait(timeout) and marker.delivered

    def shutdown(self, timeout: Optional[float]) -> bool:
        """Flush, then stop the threads; what is undelivered after ``timeout`` is spooled."""
        delivered = self.flush(timeout)
        self._closed = True
        self._abort.set()
        self._wake.set()
        self._outbox.kick()  # wakes the batcher if it waits on the outbox
        if self._thread is not None:
            self._stopped.wait(STOP_WAIT)
            self._keep_undelivered(self._outbox.close())
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

    # ── the batcher thread ────────────────────────────────────────────────────────────────

    def _run(self) -> None:
        """Pops and encodes batches (the spool's first) and puts them in the outbox."""
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
        if self._spool is not None:
            self._spooled_waiting = self._spool.waiting()
        while not self._abort.is_set():
            self._wake.wait(self._cfg.flush_interval)
            self._wake.clear()
            try:
                self._drain()
            except Exception as exc:  # noqa: BLE001 - the thread must outlive any bug
                self._warn_once(("internal", type(exc).__name__), f"bench: sender error: {exc!r}")
        self._stopped.set()
        for poster in posters:
            poster.join()
        self._transport.close()

    def _drain(self) -> None:
        queue_, outbox, abort = self._queue, self._outbox, self._abort
        while not abort.is_set():
            if self._spooled_waiting:
                outbox.wait_room(abort)
                if not abort.is_set():
                    self._load_spooled(self._spooled_waiting.pop(0))
                continue
            if not queue_:
                return
            outbox.wait_room(abort)
            if abort.is_set():
                return
            events: list[bytes] = []
            marker: Optional[_Marker] = None
            # Stop taking events at shutdown: what this thread holds must reach the outbox
            # while shutdown still waits for it (a starved machine encodes slowly).
            while queue_ and len(events) < self._cfg.max_request_events and not abort.is_set():
                item = queue_.popleft()
                if isinstance(item, _Marker):
                    marker = item
                    break
                events.append(self._encode(item))
            self._put(events, self._meta)
            if marker is not None:
                marker.settle(outbox.wait_empty(abort))

    def _load_spooled(self, name: str) -> None:
        assert self._spool is not None
        claim = self._spool.claim(name)
        loaded = self._spool.load(claim) if claim is not None else None
        if claim is None or loaded is None:
            return
        with self._lock:
            self._claims.append(claim)
        self._put(loaded.events, loaded.meta, claim, loaded.dropped)

    def _put(self, events: list[bytes], meta: dict[str, Any], origin: Optional[Claim] = None,
             dropped: int = 0) -> None:
        batches = [Batch((next(self._order),), chunk, meta, origin) for chunk in self._chunks(events)]
        if not batches:
            return
        batches[0].dropped = dropped
        if origin is not None:
            origin.pending = len(batches)
        refused = [batch for batch in batches if not self._outbox.put(batch)]
        if refused:  # shutdown stopped waiting for this thread: spooled, as it would have
            self._keep_undelivered(refused)

    def _chunks(self, events: list[bytes]) -> Iterator[list[bytes]]:
        """Requests bounded by events and uncompressed bytes."""
        chunk: list[bytes] = []
        size = 0
        for event in events:
            if chunk and (len(chunk) >= self._cfg.max_request_events
                          or size + len(event) >= self._cfg.max_request_bytes):
                yield chunk
                chunk, size = [], 0
            chunk.append(event)
            size += len(event) + 1
        if chunk:
            yield chunk

    def _encode(self, event: dict[str, Any]) -> bytes:
        ts = event.get("ts")
        if ts.__class__ is float:  # recorded as epoch seconds: formatting is the sender's job
            event["ts"] = format_ts(ts)
        if self._scrubber is not None:
            event = self._scrubber.scrub(event)
        return encode_event(event)

    # ── the posters ───────────────────────────────────────────────────────────────────────

    def _post_loop(self) -> None:
        """A poster: up to ``max_in_flight`` requests run at once, so server latency is hidden."""
        while True:
            batch = self._outbox.take()
            if batch is None:
                return
            try:
                self._attempt(batch)
            except Exception as exc:  # noqa: BLE001 - the thread must outlive any bug
                self._warn_once(("internal", type(exc).__name__), f"bench: sender error: {exc!r}")
                self._lose(batch, ("internal",), "bench: sender error")
                self._outbox.abandoned(batch)

    def _attempt(self, batch: Batch) -> None:
        """Send ``batch`` once and tell the outbox how it went."""
        if not batch.attempted:
            batch.attempted = True
            batch.dropped += self._take_dropped()
        body, headers = self._request(batch)
        try:
            assert self._transport is not None
            reply = self._transport.post(self._url, body, headers, self._cfg.request_timeout)
        except Exception as exc:  # noqa: BLE001 - any network failure, a request cut off included
            self._warn_once(("network", type(exc).__name__), f"bench: cannot reach {self._url} ({exc!r}); retrying")
            self._outbox.failed(batch)
            return
        status = reply.status
        if 200 <= status < 300:
            if batch.fails:
                logger.info("bench: delivery to %s recovered", self._url)
            self._settled(batch)
            self._outbox.answered(batch)
            return
        detail = f"bench: ingest returned {status}: {_error_text(reply)}"
        if status >= 500 or status in RETRYABLE:
            alone = status >= 500 and self._refused_alone(batch)
            if status >= 500 and batch.server_errors >= self._cfg.max_server_error_attempts:
                if len(batch.events) > 1:
                    return self._split(batch, answered=False, shared=not alone)
                if alone:
                    self._lose(batch, ("poisoned",), f"{detail}, while it accepts other batches")
                    return self._outbox.abandoned(batch)
            self._warn_once(("http", status), f"{detail}; retrying")
            self._outbox.failed(batch, None if alone else _retry_after(reply, self._cfg.max_retry_after),
                                shared=not alone)
        elif status == 413 and len(batch.events) > 1:
            self._split(batch, answered=True)
        else:
            self._lose(batch, ("rejected", status), detail if status != 413 else
                       "bench: the server rejected an event as too large (413)")
            self._outbox.answered(batch)

    def _refused_alone(self, batch: Batch) -> bool:
        """Counts a 5xx; True if the server has answered other requests since this batch's
        first 5xx began (it is up: the failure is this batch's own)."""
        batch.server_errors += 1
        if batch.first_server_error_at < 0:
            batch.first_server_error_at = batch.taken_at
        return self._outbox.answers > batch.first_server_error_at

    def _split(self, batch: Batch, answered: bool, shared: bool = True) -> None:
        """Send the halves instead, until the one event the server will not take is found."""
        halves = batch.halves()
        self._settled(batch, parts=2)  # before a half can be settled
        if answered:
            self._outbox.answered(batch, halves)
        else:
            self._outbox.failed(batch, shared=shared, replaced_by=halves)

    def _request(self, batch: Batch) -> tuple[bytes, dict[str, str]]:
        meta = {**batch.meta, "dropped": batch.dropped} if batch.dropped else batch.meta
        head = json.dumps(meta, separators=(",", ":"), default=str)
        body = b"".join((head[:-1].encode(), b',"events":[', b",".join(batch.events), b"]}"))
        if len(body) > self._cfg.gzip_min_bytes:
            return gzip.compress(body, compresslevel=1), {**self._headers, "Content-Encoding": "gzip"}
        return body, self._headers

    def _count_dropped_back(self, n: int) -> None:
        if n:
            with self._lock:
                self._dropped += n

    def _lose(self, batch: Batch, reason: tuple[Any, ...], detail: str) -> None:
        """Give ``batch`` up: counted as dropped, said once per reason."""
        self._count_dropped_back(len(batch.events) + batch.dropped)
        self._warn_once(reason, f"{detail}; {len(batch.events)} events not delivered (later ones likewise)")
        self._settled(batch)

    def _settled(self, batch: Batch, parts: int = 0) -> None:
        """A batch is delivered, given up or split in ``parts`` (called before the outbox
        hears of it, so a flush sees its effects): the spool file it came from is deleted once
        all of its batches are settled."""
        claim = batch.origin
        if claim is None or self._spool is None:
            return
        with self._lock:
            if claim not in self._claims:
                return
            claim.pending += parts - 1
            done = claim.pending <= 0
            if done:
                self._claims.remove(claim)
        if done:
            self._spool.release(claim)

    # ── exit: the spool ───────────────────────────────────────────────────────────────────

    def _keep_undelivered(self, left: list[Batch]) -> None:
        """Spool what was not delivered: another file's events in its place, then this one's."""
        spooled = lost = over = 0
        for claim, meta, events, dropped in self._undelivered(left):
            stamp = claim.stamp if claim is not None else time.time_ns()
            kept = self._spool.write(stamp, meta, events, dropped, claim) if self._spool is not None else None
            if kept is None and claim is not None:
                spooled += len(events)  # its file stays, for a later process
            elif kept is None:
                lost += len(events)
            else:
                spooled, over = spooled + kept[0], over + kept[1]
        where = self._spool.location() if self._spool is not None else ""
        if spooled:
            self._warn_once(("spooled",), f"bench: shutdown timed out; {spooled} undelivered events spooled to "
                                          f"{where} for the next process sending to {self._url}")
        if over:
            self._warn_once(("spool full",), f"bench: the spool in {where} is full; {over} undelivered events "
                                             "did not fit (counted as dropped)")
        if lost:
            self._warn_once(("shutdown",), f"bench: shutdown timed out; {lost} undelivered events are lost")

    def _undelivered(self, left: list[Batch]) -> list[tuple[Optional[Claim], dict[str, Any], list[bytes], int]]:
        """Events not delivered at shutdown, by the spool file they came from (None: this
        process's own, the queue's last), with their batch head and drop count."""
        items = list(self._queue)
        self._queue.clear()
        for item in items:
            if isinstance(item, _Marker):
                item.settle(False)
        with self._lock:
            claims, self._claims = self._claims, []
        for batch in left:  # a file's batches the sender put down after shutdown took its claims
            if batch.origin is not None and batch.origin not in claims:
                claims.append(batch.origin)
        groups: list[tuple[Optional[Claim], dict[str, Any], list[bytes], int]] = []
        for origin in (*claims, None):
            batches = [b for b in left if b.origin is origin]
            events = [e for b in batches for e in b.events]
            dropped = sum(b.dropped for b in batches)
            if origin is None:
                events += [self._encode(item) for item in items if not isinstance(item, _Marker)]
                dropped += self._take_dropped()
            groups.append((origin, batches[0].meta if batches else self._meta, events, dropped))
        return groups

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
