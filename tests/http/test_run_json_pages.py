"""A run too big for one answer, over real HTTP on each store: the run JSON pages by bytes as
well as by spans, so no answer passes 5 MB (Lambda returns at most 6 MB), and its pages,
followed by `next_cursor`, give every span once, in start order, content and all. A run of
1,000 spans with 6,000 characters each was one answer of 6.4 MB."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from bench_core.domain.models import AgentMeta
from bench_core.reads import runs as reads

from tests.conftest import RunningServer, serving
from tests.factories import clean
from tests.http.runs_data import tree_run_events
from tests.http.surfaces_data import show_content
from tests.http.test_ingest_http import new_login

MB = 1024 * 1024
SPANS = 1000
CHARS = 6000
"""Characters of content per span: half in its input, half in its output."""


@pytest.fixture(params=["memory", "sqlite", "dynamodb"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunningServer]:
    if request.param != "dynamodb":
        with serving(tmp_path, store=request.param) as running:
            yield running
        return
    from tests.aws.moto_table import dynamo_store

    with dynamo_store() as store, serving(tmp_path, over=store, store="dynamodb") as running:
        yield running


def store_run(server: RunningServer, login: str, run_id: str) -> list[str]:
    """The run, through the store's ingest in batches of 400 events; its span ids in start
    order."""
    events = tree_run_events(run_id, SPANS, chars=CHARS)
    for i in range(0, len(events), 400):
        server.store.ingest.ingest(login, AgentMeta(slug="heavy"), clean(events[i:i + 400]))
    show_content(server, login, "heavy")
    return [run_id, *(f"{run_id}-{n}" for n in range(1, SPANS))]


def test_a_run_bigger_than_one_answer_pages_by_bytes_every_span_once_in_order(
        server: RunningServer) -> None:
    login = new_login()
    expected = store_run(server, login, "heavy-run")
    url = f"{server.url}/api/agents/{login}/heavy/runs/heavy-run"
    seen: list[str] = []
    sizes: list[int] = []
    cursor: str | None = None
    while True:
        reply = httpx.get(url, params={"cursor": cursor} if cursor else {}, timeout=120)
        assert reply.status_code == 200, reply.text[:500]
        sizes.append(len(reply.content))
        answer = reply.json()
        assert (answer["span_order"], answer["span_count"]) == ("start", SPANS)
        assert all(len(s["output"]) == CHARS // 2 for s in answer["spans"])
        seen += [s["task_id"] for s in answer["spans"]]
        cursor = answer["next_cursor"]
        if cursor is None:
            break
    assert seen == expected
    assert max(sizes) < 5 * MB and len(sizes) == 2, sizes
    assert sizes[0] > reads.ANSWER_BYTES - 2 * CHARS  # as full as the budget lets it be
