"""Agents for the public-surface tests, sent through real `POST /ingest`, and a reader for the
numbers pages expose (`data-metric` / `data-value`) so tests can hold them against the JSON."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

import httpx
from bench_core.domain.models import AgentRef

from tests.conftest import RunningServer, poll
from tests.factories import batch, day_old, task_events
from tests.http.test_ingest_http import new_login, post

HOSTILE = "<script>alert(1)</script>\"'&]]><svg onload=alert(2)>"
"""Text that is markup in HTML, breaks out of attributes and CDATA, and is SVG."""


@dataclass
class Seeded:
    login: str
    slug: str
    key: str

    @property
    def path(self) -> str:
        return f"{self.login}/{self.slug}"


def seed_agent(server: RunningServer, *, runs: int = 12, failures: int = 3,
               slug: str = "agent", login: str | None = None, key: str | None = None,
               duration_ms: int = 250, cost: float | None = 0.004, **meta: Any) -> Seeded:
    """An agent with `runs` finished runs (the last `failures` of them failed), each holding a
    recognisable input and output so tests can look for them; made two days ago, so with a
    few runs it ranks on the leaderboard (`ranking.Qualification`)."""
    login = login or new_login()
    key = key or server.create_key(login)
    server.store.agents.create_agent(day_old(login, slug))
    events = []
    for i in range(runs):
        status = "failed" if i >= runs - failures else "success"
        events += task_events(f"t{i}-{uuid.uuid4().hex[:6]}", "search", status=status,
                              duration_ms=duration_ms + 10 * i, cost=cost,
                              input={"secret_input": f"in-{i}"}, output=f"secret-output-{i}")
    response = post(server, batch(slug, events, **meta), key)
    assert response.status_code == 200, response.text
    show_content(server, login, slug)
    return Seeded(login, slug, key)


def show_content(server: RunningServer, login: str, slug: str) -> None:
    """Show the agent's inputs and outputs, as an owner does on the dashboard: an agent made by
    its first batch hides them, and these tests look at pages that show them."""
    server.store.agents.update_agent(AgentRef(login, slug), {"hide_inputs": False,
                                                             "hide_outputs": False})


def wait_until_judged(server: RunningServer, agent: Seeded, runs: int) -> None:
    """Until the server's judge has scored all `runs`: it works in the background, and more
    slowly while batches keep arriving."""
    poll(lambda: httpx.get(f"{server.url}/api/agents/{agent.path}",
                           headers={"X-Bench-Key": agent.key}).json()["eval_count"],
         lambda judged: judged >= runs)


def set_agent(server: RunningServer, agent: Seeded, **changes: Any) -> None:
    response = httpx.patch(f"{server.url}/api/agents/{agent.path}", json=changes,
                           headers={"X-Bench-Key": agent.key})
    assert response.status_code == 200, response.text


def fetch(server: RunningServer, path: str, key: str | None = None,
          **headers: str) -> httpx.Response:
    if key:
        headers["X-Bench-Key"] = key
    return httpx.get(server.url + path, headers={"Accept": "text/html", **headers}, timeout=30)


class _Metrics(HTMLParser):
    VOID = frozenset({"br", "img", "input", "meta", "link", "hr", "source"})

    def __init__(self) -> None:
        super().__init__()
        self.found: list[list[str]] = []
        self._open: list[int | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.VOID:
            return
        a = dict(attrs)
        if "data-metric" in a:
            self.found.append([a["data-metric"] or "", a.get("data-value") or "", ""])
            self._open.append(len(self.found) - 1)
        else:
            self._open.append(None)

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.VOID and self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for index in reversed(self._open):
            if index is not None:
                self.found[index][2] += data
                return


def shown_metrics(html: str) -> list[tuple[str, str, str]]:
    """(metric, data-value, visible text) of every element a page marks with `data-metric`,
    in document order."""
    parser = _Metrics()
    parser.feed(html)
    return [(m, v, " ".join(t.split())) for m, v, t in parser.found]


def json_value(summary: dict[str, Any], metric: str) -> Any:
    """The value at a dotted path (`latency_ms.p50`) of a JSON summary."""
    value: Any = summary
    for part in metric.split("."):
        value = value[part]
    return value
