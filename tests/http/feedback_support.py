"""What the feedback tests share: a run to give feedback on, and the route's address."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.conftest import RunningServer
from tests.factories import batch, task_events
from tests.http.test_ingest_http import post


def a_run(server: RunningServer, key: str, slug: str) -> str:
    """A finished run of the agent (with a subtask, `{run}-child`), sent with its key; its id."""
    run = "run-" + uuid.uuid4().hex[:10]
    events = task_events(run, "answer") + task_events(f"{run}-child", "lookup", parent=run)
    assert post(server, batch(slug, events), key).status_code == 200
    return run


def give(server: RunningServer, path: str, run: str, body: Any, key: str | None = None,
         **headers: str) -> httpx.Response:
    if key is not None:
        headers["X-Bench-Key"] = key
    content = body if isinstance(body, bytes) else None
    return httpx.post(f"{server.url}/api/agents/{path}/runs/{run}/feedback", timeout=30,
                      content=content, json=None if content is not None else body,
                      headers=headers)
