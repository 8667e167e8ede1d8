"""The /try sandbox: Bench without signing up.

A sandbox is a throwaway owner (`try--<random>`: GitHub allows no double hyphen, so no real
account can ever have such a login), one private agent, and an agent key bound to it that
expires in 24 hours, as do the browser session that owns it and the agent with all its data
(a temporary agent: the store deletes it then, see `store/sqlite/retention.py`). Being private, the agent appears
on no public surface -- not the leaderboard, not search -- and only that browser sees it.
Starting one is rate-limited per client; the demo run goes through the same ingest as any agent.
"""

from __future__ import annotations

import random
import secrets
import uuid
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from ..accounts import AccountConcerns
from ..accounts.agents import AgentsAndKeys
from ..domain.keys import new_key
from ..domain.models import KeyRecord, iso
from ..domain.privacy import new_agent

LOGIN_PREFIX = "try--"
SLUG = "demo-agent"
DISPLAY_NAME = "Sandbox demo agent"
TTL = timedelta(hours=24)
WINDOW = timedelta(hours=1)
DEMO_STEPS = 6
"""Runs one demo sends: enough to fill a profile's numbers, one of them failing."""
FAILING_STEP = 3


def is_sandbox(login: str) -> bool:
    return login.startswith(LOGIN_PREFIX)


def allow_start(store: AccountConcerns, client: str, per_hour: int) -> bool:
    """Count a start by `client` (an IP address) in this hour; False past `per_hour`."""
    now = store.clock.now()
    bucket = f"try:{client}:{now:%Y%m%d%H}"
    return store.accounts.count_hit(bucket, iso(now + WINDOW)) <= per_hour


def create(store: AgentsAndKeys) -> tuple[str, str]:
    """A new sandbox: its login and its agent key (the only time the key is seen)."""
    now = store.clock.now()
    login, expires_at = LOGIN_PREFIX + secrets.token_hex(6), iso(now + TTL)
    store.agents.create_agent(new_agent(login, SLUG, iso(now), display_name=DISPLAY_NAME,
                                        visibility="private", expires_at=expires_at))
    raw, record = new_key(login, SLUG, name="sandbox", now=now)
    store.accounts.create_key(replace(record, expires_at=expires_at))
    return login, raw


def demo_key(store: AccountConcerns, login: str) -> KeyRecord | None:
    """The sandbox's live key, with which its demo runs are ingested."""
    now = store.clock.now()
    return next((k for k in store.accounts.list_keys(login) if k.agent_slug == SLUG and k.active_at(now)),
                None)


# ---- the demo run: a small research assistant answering questions ------------------------------

QUESTIONS = (
    ("What changed in HTTP/3?", "HTTP/3 runs over QUIC (UDP) instead of TCP: no head-of-line "
     "blocking between streams, and 0-RTT connection setup."),
    ("Summarise the CAP theorem", "A distributed store that partitions must give up either "
     "consistency or availability while the partition lasts."),
    ("Why is the sky blue?", "Rayleigh scattering: air molecules scatter short (blue) "
     "wavelengths of sunlight much more than long (red) ones."),
    ("Compare SQLite and PostgreSQL for a small app", "SQLite: one file, no server, ideal for "
     "one writer; PostgreSQL: a server, concurrent writers, richer types."),
    ("What is a p95 latency?", "The latency 95% of requests beat: the slow tail users notice."),
    ("How does TLS 1.3 save a round trip?", "The client sends its key share in the first "
     "message, so the handshake completes in one round trip."),
)


def demo_batch(step: int, now: datetime) -> dict[str, Any]:
    """The batch the SDK would send for run `step` of the demo: a question answered through a
    search tool, two page reads and a model call (with its cost and token counts); one run fails
    with a search timeout. Durations vary as real ones do."""
    rng = random.Random()
    question, answer = QUESTIONS[step % len(QUESTIONS)]
    clock = _Clock(now)
    run = uuid.uuid4().hex
    events = [_event(clock, "task.start", run, "answer_question", input={"question": question})]
    search = uuid.uuid4().hex
    events.append(_event(clock, "task.start", search, "web_search", parent=run,
                         input={"query": question.lower()}))
    events.append(_event(clock.tick(5), "tool.use", None, None, data={"tool": "web_search"}))
    if step % DEMO_STEPS == FAILING_STEP:
        events.append(_end(clock.tick(3000), search, "web_search", run, "failed",
                           "TimeoutError: search backend did not answer in 3 s", 3005))
        events.append(_end(clock.tick(2), run, "answer_question", None, "failed",
                           "could not find sources", 3020))
        return _batch(events)
    took = rng.randint(180, 900)
    events.append(_end(clock.tick(took), search, "web_search", run, "success",
                       {"results": 5, "top": "en.wikipedia.org"}, took + 5))
    for page in ("en.wikipedia.org", "developer.mozilla.org"):
        read = uuid.uuid4().hex
        took = rng.randint(90, 400)
        events.append(_event(clock, "task.start", read, "read_page", parent=run,
                             input={"url": f"https://{page}/"}))
        events.append(_end(clock.tick(took), read, "read_page", run, "success",
                           {"chars": rng.randint(4000, 20000)}, took))
    llm = uuid.uuid4().hex
    tokens_in, tokens_out = rng.randint(900, 2400), rng.randint(120, 400)
    cost = round(tokens_in * 0.15e-6 + tokens_out * 0.6e-6, 6)
    took = rng.randint(700, 2600)
    events.append(_event(clock, "task.start", llm, "summarize", parent=run,
                         input={"model": "gpt-4o-mini", "sources": 2}))
    events.append(_event(clock.tick(took), "task.log", llm, "summarize", parent=run,
                         data={"label": "cost", "cost_usd": cost,
                               "cost_details": {"source": "manual"}}))
    events.append(_event(clock, "task.log", llm, "summarize", parent=run,
                         data={"label": "tokens", "value": {"input": tokens_in,
                                                            "output": tokens_out}}))
    events.append(_end(clock.tick(1), llm, "summarize", run, "success", answer, took, cost=cost))
    events.append(_end(clock.tick(4), run, "answer_question", None, "success",
                       {"answer": answer, "sources": 2}, clock.elapsed_ms, cost=0.0))
    return _batch(events)


class _Clock:
    """Timestamps of one run, moving forward as its steps take time."""

    def __init__(self, start: datetime) -> None:
        self.start = self.now = start

    def tick(self, ms: int) -> _Clock:
        self.now += timedelta(milliseconds=ms)
        return self

    @property
    def elapsed_ms(self) -> int:
        return int((self.now - self.start).total_seconds() * 1000)


def _event(clock: _Clock, kind: str, task_id: str | None, name: str | None, *,
           parent: str | None = None, **fields: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"id": uuid.uuid4().hex, "kind": kind, "ts": iso(clock.now)}
    if task_id is not None:
        event |= {"task_id": task_id, "name": name, "parent_task_id": parent}
    return event | fields


def _end(clock: _Clock, task_id: str, name: str, parent: str | None, status: str, output: Any,
         duration_ms: int, cost: float | None = None) -> dict[str, Any]:
    event = _event(clock, "task.end", task_id, name, parent=parent, status=status, output=output,
                   duration_ms=duration_ms)
    if cost:
        event |= {"cost_usd": cost, "cost_breakdown": [{"source": "manual", "amount_usd": cost}]}
    return event


def _batch(events: list[dict[str, Any]]) -> dict[str, Any]:
    return {"agent_slug": SLUG, "display_name": DISPLAY_NAME, "model": "gpt-4o-mini",
            "framework": "bench-demo", "tools": ["web_search", "read_page"], "events": events}
