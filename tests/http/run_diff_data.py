"""Two runs of one agent that part in known places, sent through real `POST /ingest`: B's
parse succeeds where A's failed, B fetches a third page, drops A's review and answers with
another model, more tokens and another (secret) answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from bench_core.domain.models import TaskState

from tests.conftest import RunningServer
from tests.factories import batch
from tests.http.runs_data import _span
from tests.http.test_ingest_http import new_login, post


@dataclass
class TwoRuns:
    login: str
    slug: str
    key: str
    a: str
    b: str

    @property
    def path(self) -> str:
        return f"{self.login}/{self.slug}"


def _evidence(model: str, tokens: int) -> dict[str, Any]:
    return {"label": "evidence", "provider": "openai", "model": model,
            "input_tokens": tokens, "output_tokens": 300}


def run_events(run_id: str, base: int, *, b: bool) -> list[dict[str, Any]]:
    """research > plan, search > (fetch page 1, fetch page 2 > parse[, fetch page 3]), answer
    [, review]."""
    def i(name: str) -> str:
        return f"{run_id}-{name}"

    spans = [
        *_span(i("plan"), "plan", run_id, base + 10, 300, output="secret-plan"),
        *_span(i("search"), "search", run_id, base + 350, 1400),
        *_span(i("fetch-1"), "fetch page 1", i("search"), base + 400, 500),
        *_span(i("fetch-2"), "fetch page 2", i("search"), base + 900, 800),
        *_span(i("parse"), "parse", i("fetch-2"), base + 950, 600,
               status="success" if b else "failed",
               output="parsed" if b else "TimeoutError: secret-error-text"),
        *(_span(i("fetch-3"), "fetch page 3", i("search"), base + 1000, 200) if b else []),
        *_span(i("answer"), "answer", run_id, base + 1800, 400,
               output=f"secret-answer-{'b' if b else 'a'}",
               logs=[_evidence("gpt-4o" if b else "gpt-4o-mini", 1500 if b else 1200)]),
        *([] if b else _span(i("review"), "review", run_id, base + 2250, 40)),
    ]
    root = _span(run_id, "research", None, base, 3300 if b else 2300,
                 input={"question": "secret-question"}, output=f"secret-final-{run_id}",
                 cost=0.004 if b else 0.003)
    return [root[0], *spans, *root[1:]]


SECRETS = ("secret-plan", "secret-error-text", "secret-answer-a", "secret-answer-b",
           "secret-question", "secret-final")


def seed_two_runs(server: RunningServer, slug: str = "differ") -> TwoRuns:
    """The two runs, under an agent made by its first batch: its content hidden from others."""
    login = new_login()
    key = server.create_key(login)
    events = [*run_events("run-a", 100_000, b=False), *run_events("run-b", 200_000, b=True)]
    response = post(server, batch(slug, events), key)
    assert response.status_code == 200, response.text
    return TwoRuns(login, slug, key, "run-a", "run-b")


def span_reads(server: RunningServer, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The `limit` of every read of a run's spans the server makes from now on (its store is
    in this process)."""
    read: list[int] = []
    spans = server.store.runs.run_spans

    def counting(ref: Any, run: TaskState, *, limit: int, **kw: Any) -> list[TaskState]:
        read.append(limit)
        return spans(ref, run, limit=limit, **kw)

    monkeypatch.setattr(server.store.runs, "run_spans", counting)
    return read
