"""Encoded batches waiting to be sent, and the one backoff they share.

Batches leave oldest first. When a request fails (the server is down, restarting or asks us to
slow down), the whole outbox backs off, not just that batch: one probe at a time is sent after
the shared delay, and the first success ends the backoff of every batch at once, so everything
waiting goes out, oldest first, as soon as the server answers again. A per-batch backoff would
leave the batches that failed first waiting longest (up to the cap) while newer ones are
delivered, and an exit flush would give up on exactly those.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass(eq=False)
class Batch:
    """One request's events, encoded, with the head (agent, SDK) they are sent under."""

    order: tuple[int, ...]
    """Sending order, oldest first; the halves of a split batch keep their place."""
    events: list[bytes]
    meta: dict[str, Any]
    origin: Any = None
    """The spool file the events were read from, if any (settled when all its batches are)."""
    dropped: int = 0
    """Events dropped earlier, reported to the server with this batch."""
    attempted: bool = False
    fails: int = 0
    server_errors: int = 0
    taken_at: int = 0
    """The outbox's count of answers when this batch was last taken to be sent."""
    first_server_error_at: int = -1
    """That count when the attempt that got its first 5xx began (-1: none yet); halves keep
    their batch's, so an answer to a sibling already shows the server takes other requests."""

    def halves(self) -> tuple[Batch, Batch]:
        half = len(self.events) // 2
        parts = (Batch(self.order + (0,), self.events[:half], self.meta, self.origin, self.dropped, True),
                 Batch(self.order + (1,), self.events[half:], self.meta, self.origin, 0, True))
        for part in parts:
            part.first_server_error_at = self.first_server_error_at
        return parts


@dataclass
class _State:
    waiting: list[Batch] = field(default_factory=list)
    in_flight: set[Batch] = field(default_factory=set)
    failures: int = 0
    """Failed attempts since the last success; 0 means the server is answering."""
    retry_at: float = 0.0
    asked_until: float = 0.0
    """The end of the wait the server asked for (``Retry-After``), which a flush respects."""
    probe: Optional[Batch] = None
    answers: int = 0
    closed: bool = False


class Outbox:
    """Thread-safe: the batcher puts, up to ``max_in_flight`` posters take and report back."""

    def __init__(self, *, capacity: int, backoff_base: float, backoff_cap: float) -> None:
        self._capacity = capacity
        self._base = backoff_base
        self._cap = backoff_cap
        self._cond = threading.Condition()
        self._s = _State()

    # ── the batcher ──

    def wait_room(self, abort: threading.Event) -> None:
        """Until fewer than ``capacity`` batches are held (the agent's queue absorbs the rest)."""
        with self._cond:
            while len(self._s.waiting) + len(self._s.in_flight) >= self._capacity and not abort.is_set():
                self._cond.wait(0.1)

    def put(self, batch: Batch) -> bool:
        """Hold ``batch``; False once closed (shutdown has taken what was here): the caller
        keeps it."""
        with self._cond:
            if self._s.closed:
                return False
            self._s.waiting.append(batch)
            self._cond.notify_all()
            return True

    def wait_empty(self, abort: threading.Event) -> bool:
        """Until every batch is delivered or given up; False if ``abort`` came first."""
        with self._cond:
            while (self._s.waiting or self._s.in_flight) and not abort.is_set():
                self._cond.wait(0.1)
            return not (self._s.waiting or self._s.in_flight)

    def kick(self) -> None:
        """Try now instead of at the end of the backoff (a flush: the caller is waiting), unless
        the server asked us to wait longer."""
        with self._cond:
            self._s.retry_at = self._s.asked_until
            self._cond.notify_all()

    # ── the posters ──

    def take(self) -> Optional[Batch]:
        """The next batch to send, waiting for one and for the backoff; None once closed.

        While the server answers, the oldest batch. While it fails, one probe at a time after
        the shared delay: the oldest batch among those with the fewest 5xx answers, so a batch
        the server cannot take (a 5xx for that batch alone) does not hold every other back.
        """
        s = self._s
        with self._cond:
            while not s.closed:
                delay = s.retry_at - time.monotonic() if s.failures else 0.0
                if s.waiting and s.probe is None and delay <= 0:
                    if s.failures:
                        batch = min(s.waiting, key=lambda b: (b.server_errors, b.order))
                        s.probe = batch
                    else:
                        batch = min(s.waiting, key=lambda b: b.order)
                    s.waiting.remove(batch)
                    s.in_flight.add(batch)
                    batch.taken_at = s.answers
                    return batch
                self._cond.wait(delay if s.waiting and s.probe is None else None)
            return None

    def answered(self, batch: Batch, replaced_by: tuple[Batch, ...] = ()) -> None:
        """The server answered (accepted it, or refused it for good): it is up, so the backoff
        ends for every batch. ``replaced_by`` (a split batch's halves) wait in its place."""
        with self._cond:
            s = self._s
            s.in_flight.discard(batch)
            s.waiting.extend(replaced_by)
            s.failures, s.retry_at, s.asked_until, s.probe = 0, 0.0, 0.0, None
            s.answers += 1
            self._cond.notify_all()

    def failed(self, batch: Batch, delay: Optional[float] = None, shared: bool = True,
               replaced_by: tuple[Batch, ...] = ()) -> None:
        """Back to waiting (or ``replaced_by`` in its place). A ``shared`` failure (the server
        is down, failing or asking us to wait ``delay`` seconds) backs off every batch; the
        first failure after a success and each failed probe lengthen the backoff, other
        requests already in flight do not."""
        with self._cond:
            s = self._s
            s.in_flight.discard(batch)
            s.waiting.extend(replaced_by or (batch,))
            batch.fails += 1
            was_probe = s.probe is batch
            if was_probe:
                s.probe = None
            now = time.monotonic()
            if shared and delay is not None:
                s.asked_until = max(s.asked_until, now + delay)
            if shared and (was_probe or not s.failures):
                s.failures += 1
                s.retry_at = now + (self._backoff(s.failures) if delay is None else delay)
            elif shared and delay is not None:
                s.retry_at = max(s.retry_at, now + delay)
            self._cond.notify_all()

    def abandoned(self, batch: Batch) -> None:
        """Given up without an answer (an error of our own): only forget it."""
        with self._cond:
            self._s.in_flight.discard(batch)
            if self._s.probe is batch:
                self._s.probe = None
            self._cond.notify_all()

    @property
    def answers(self) -> int:
        """Answers received so far: a batch failing while this grows is failing on its own."""
        return self._s.answers

    # ── shutdown ──

    def close(self) -> list[Batch]:
        """Stop the posters; returns every batch not yet answered, oldest first (including
        those in flight, whose answer may never come)."""
        with self._cond:
            s = self._s
            s.closed = True
            left = sorted([*s.waiting, *s.in_flight], key=lambda b: b.order)
            s.waiting, s.in_flight = [], set()
            self._cond.notify_all()
            return left

    def _backoff(self, failures: int) -> float:
        ceiling = min(self._cap, self._base * 2.0 ** (failures - 1))
        return ceiling / 2 + random.uniform(0, ceiling / 2)
