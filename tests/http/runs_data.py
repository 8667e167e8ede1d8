"""Runs for the run-explorer tests, sent through real `POST /ingest` in the original client's
format: a research run whose failure hides three levels down, and big and deep runs."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.conftest import RunningServer
from tests.factories import batch, ts
from tests.http.surfaces_data import show_content
from tests.http.test_ingest_http import new_login, post

ERROR = "TimeoutError: the page took longer than 30 s"


@dataclass
class SeededRun:
    login: str
    slug: str
    key: str
    run_id: str
    ids: dict[str, str]
    """Span ids by name."""

    @property
    def path(self) -> str:
        return f"{self.login}/{self.slug}"


def _span(task_id: str, name: str, parent: str | None, start: int, duration: int,
          status: str = "success", output: Any = "ok", input: Any = None,
          logs: list[Any] | None = None, cost: float | None = None) -> list[dict[str, Any]]:
    """start, logs, end of one task, at `start` ms after the run's start (original client)."""
    def event(kind: str, at: int, **fields: Any) -> dict[str, Any]:
        return {"id": uuid.uuid4().hex[:20], "kind": kind, "ts": ts(at), "task_id": task_id,
                "name": name, "parent_task_id": parent, **fields}

    events = [event("task.start", start, input=input if input is not None else {"step": name})]
    events += [event("task.log", start + 1 + i, data=data) for i, data in enumerate(logs or [])]
    events.append(event("task.end", start + duration, status=status, output=output,
                        duration_ms=duration, cost_usd=cost, data={"span_meta": name}))
    return events


def research_events(prefix: str) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """research > plan, search > (fetch 1, fetch 2 > parse [failed]), answer."""
    ids = {name: f"{prefix}-{name}" for name in
           ("research", "plan", "search", "fetch-1", "fetch-2", "parse", "answer")}
    base = 100_000 + hash(prefix) % 1000 * 10_000
    events = [
        *_span(ids["plan"], "plan", ids["research"], base + 10, 300,
               input={"question": "secret-question"}, output="secret-plan"),
        *_span(ids["fetch-1"], "fetch page 1", ids["search"], base + 400, 500),
        *_span(ids["parse"], "parse", ids["fetch-2"], base + 950, 600, status="failed",
               output=ERROR, logs=[{"label": "bytes", "value": 1234}]),
        *_span(ids["fetch-2"], "fetch page 2", ids["search"], base + 900, 800),
        *_span(ids["search"], "search", ids["research"], base + 350, 1400,
               logs=[{"label": "found", "value": "secret-log-value"}]),
        *_span(ids["answer"], "answer", ids["research"], base + 1800, 400,
               output="secret-answer", cost=0.002,
               logs=[{"label": "evidence", "provider": "openai", "model": "gpt-4o-mini",
                      "input_tokens": 1200, "output_tokens": 300}]),
    ]
    root = _span(ids["research"], "research", None, base, 2300,
                 input={"question": "secret-question"}, output="secret-final", cost=0.003)
    return [root[0], *events, *root[1:]], ids


def seed_research_run(server: RunningServer, *, login: str | None = None, key: str | None = None,
                      slug: str = "researcher") -> SeededRun:
    login = login or new_login()
    key = key or server.create_key(login)
    events, ids = research_events(uuid.uuid4().hex[:8])
    response = post(server, batch(slug, events), key)
    assert response.status_code == 200, response.text
    show_content(server, login, slug)
    return SeededRun(login, slug, key, ids["research"], ids)


def wide_and_deep_events(prefix: str, children: int, depth: int) -> list[dict[str, Any]]:
    """A root with `children` leaf subtasks and one chain `depth` levels deep."""
    root = f"{prefix}-root"
    events = _span(root, "big run", None, 0, 10_000)
    body = events[:1]
    for i in range(children):
        body += _span(f"{prefix}-c{i}", f"leaf {i}", root, 10 + i, 5)
    parent = root
    for level in range(depth):
        task = f"{prefix}-deep{level}"
        body += _span(task, f"level {level + 1}", parent, 20 + level, 100,
                      status="failed" if level == depth - 1 else "success")
        parent = task
    return [*body, *events[1:]]


def tree_run_events(run_id: str, spans: int, *, fanout: int = 10, failed_every: int = 1000,
                    chars: int | None = None, text: Callable[[int, int], str] | None = None
                    ) -> list[dict[str, Any]]:
    """A run of `spans` spans as an agent that works depth first makes it: each span has up to
    `fanout` children (the tree filled level by level), runs them one after the other and
    ends after its last. Span `{run_id}-{n}` is the n-th to start (the root is `{run_id}`),
    a millisecond after the one before, so a span's subtree is the spans that start after it
    and before its next sibling; every `failed_every`-th failed. Each is a start and an end
    with a short input and output (some 600 bytes stored): a hundred thousand spans build in
    seconds through `store.ingest.ingest` in big batches; or with `chars` characters of
    content, half in its input and half in its output, repeated letters or `text(seed, size)`
    (`factories.prose`, which deflates as real text does)."""
    def filler(letter: str, n: int, size: int) -> str:
        return letter * size if text is None else text(n, size)

    def context(n: int) -> str:
        return filler("c", 2 * n, 120 if chars is None else chars // 2)

    def answer(n: int) -> str:
        return f"answer {n} " + "a" * 200 if chars is None else filler("a", 2 * n + 1, chars // 2)

    below = [1] * spans  # the size of each subtree, in level order (children of h: h*f+1..)
    for h in reversed(range(1, spans)):
        below[(h - 1) // fanout] += below[h]
    order = [0] * spans  # each span's place in start order (preorder), from its parent's
    for h in range(1, spans):
        first = (h - 1) // fanout * fanout + 1
        order[h] = order[(h - 1) // fanout] + 1 + sum(below[first:h])
    events: list[dict[str, Any]] = []
    for h in range(spans):
        n = order[h]
        task_id = f"{run_id}-{n}" if n else run_id
        parent = None if h == 0 else order[(h - 1) // fanout]
        failed = n and n % failed_every == 0
        common = {"task_id": task_id, "name": f"step {n % 97}",
                  "parent_task_id": None if parent is None else
                  f"{run_id}-{parent}" if parent else run_id}
        events += [
            {"id": f"{task_id}-s", "kind": "task.start", "ts": ts(n), **common,
             "input": {"query": f"question {n}", "context": context(n)}},
            {"id": f"{task_id}-e", "kind": "task.end", "ts": ts(n + below[h]), **common,
             "status": "failed" if failed else "success", "duration_ms": below[h],
             "output": ERROR if failed else answer(n)}]
    return events
