"""Events and batches in the original client's wire format, for tests."""

from __future__ import annotations

import functools
import itertools
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from bench_core.clock import SYSTEM_CLOCK
from bench_core.domain.models import Agent, CleanEvent, WireEvent, iso
from bench_core.domain.privacy import IMPLICIT_AGENT
from bench_core.ingest.wire import clean_event
from bench_core.settings import Limits

_clock = itertools.count()
BASE = datetime(2026, 12, 2, 16, 0, 0, tzinfo=UTC)


def ts(offset_ms: int | None = None) -> str:
    """Increasing timestamps, so events sort in the order tests make them."""
    ms = next(_clock) if offset_ms is None else offset_ms
    return iso(BASE + timedelta(milliseconds=ms))


def an_hour_ago(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`events` in their order, a millisecond apart from an hour ago: for code that looks only
    at a recent window (the eval sweep takes runs of the last two days), whatever day the
    tests run on."""
    start = SYSTEM_CLOCK.now() - timedelta(hours=1)
    return [{**e, "ts": iso(start + timedelta(milliseconds=i))} for i, e in enumerate(events)]


def day_old(login: str, slug: str, **fields: Any) -> Agent:
    """An agent as its first batch made it two days ago (`created_at`, Bench's clock), for
    `store.agents.create_agent` before its runs: a new agent ranks only once it has a few runs and is
    a day old (`ranking.Qualification`), whatever day the tests run on."""
    return Agent(login=login, slug=slug, created_at=iso(SYSTEM_CLOCK.now() - timedelta(days=2)),
                 **{**IMPLICIT_AGENT, **fields})


def ev(kind: str, task_id: str | None = None, **fields: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"id": uuid.uuid4().hex[:20], "kind": kind, "ts": ts()}
    if task_id is not None:
        event["task_id"] = task_id
    event.update(fields)
    return event


def task_events(task_id: str, name: str = "search", *, status: str = "success",
                parent: str | None = None, cost: float | None = None, duration_ms: int = 100,
                output: Any = "ok", input: Any = None) -> list[dict[str, Any]]:
    """start, a cost log (when `cost`), end -- as the original client sends a task."""
    events = [ev("task.start", task_id, name=name, parent_task_id=parent,
                 input=input if input is not None else {"q": task_id})]
    if cost is not None:
        events.append(ev("task.log", task_id, name=name, parent_task_id=parent,
                         data={"label": "cost", "cost_usd": cost,
                               "cost_details": {"source": "manual"}}))
    end = ev("task.end", task_id, name=name, parent_task_id=parent, status=status,
             output=output, duration_ms=duration_ms, cost_usd=cost or 0.0, data=None)
    if cost:
        end["cost_breakdown"] = [{"source": "manual", "amount_usd": cost}]
    events.append(end)
    return events


def batch(slug: str, events: list[dict[str, Any]], **meta: Any) -> dict[str, Any]:
    return {"agent_slug": slug, "display_name": None, "model": None, "framework": None,
            "architecture": None, "tools": None, "events": events, **meta}


def clean(events: list[dict[str, Any]], limits: Limits | None = None) -> list[CleanEvent]:
    return [clean_event(WireEvent.model_validate(e), limits or Limits()) for e in events]


@functools.cache
def _corpus() -> str:
    """English prose: the docstrings of some standard library modules, their classes and
    their classes' methods (about 400 KB)."""
    import importlib

    texts: list[str] = []
    for name in ("argparse", "asyncio", "collections", "configparser", "csv", "datetime",
                 "decimal", "difflib", "email.message", "enum", "fractions", "ftplib",
                 "http.client", "http.cookiejar", "imaplib", "inspect", "json", "logging",
                 "mailbox", "pathlib", "pdb", "pickle", "shutil", "smtplib", "socket",
                 "sqlite3", "ssl", "subprocess", "tarfile", "tempfile", "textwrap",
                 "threading", "typing", "unittest", "urllib.request", "zipfile"):
        module = importlib.import_module(name)
        for value in vars(module).values():
            if callable(value) and getattr(value, "__module__", "") == name:
                members = list(vars(value).values()) if isinstance(value, type) else []
                texts += [doc for v in (value, *members) if callable(v)
                          and isinstance(doc := getattr(v, "__doc__", None), str)]
    return " ".join(" ".join(texts).split())


def prose(seed: int, size: int) -> str:
    """`size` characters of English prose from a place `seed` picks: content that deflates as a
    model's messages do (about 3 to 1 with zlib), where one letter repeated shrinks to nothing."""
    corpus = _corpus()
    start = (seed * 104_729) % (len(corpus) - size)
    return corpus[start:start + size]
