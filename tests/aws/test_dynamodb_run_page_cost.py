"""DynamoDB: the run page reads what it draws. A run of 1,000 spans with 6,000 characters of
content each costs under 50 RRU to draw, with a span selected too, by DynamoDB's sizing rules
(`tests/perf/dynamodb_cost.py`, deterministic for a given run): the spans' rows come from the
`spans` index, which projects only them, and content is read by key for the selected span
alone. Through the ALL-projected `runs` index the same page read 824.5 RRU."""

from __future__ import annotations

import pytest
from bench_core.domain.models import TaskState
from bench_core.store.dynamodb.codec.spans import span_row, task_from_span

from tests.perf.dynamodb_cost import run_views

MAX_PAGE_READ_UNITS = 50


@pytest.mark.slow
def test_the_page_of_a_thousand_span_run_reads_under_fifty_read_units() -> None:
    views = run_views(json=False)
    assert views.page < MAX_PAGE_READ_UNITS, f"{views.page} RRU"
    assert views.selected < MAX_PAGE_READ_UNITS, f"{views.selected} RRU with a span selected"
    assert views.selected > views.page  # the selected span is read, content and all


def test_a_row_gives_back_what_the_page_draws_of_a_span() -> None:
    """Times are kept as milliseconds after the span's place in its run, exactly; a time that
    is not to the millisecond is kept as it is."""
    spans = [
        TaskState("a", parent_task_id="p", name="search", status="success",
                  started_at="2026-12-02T16:00:00.500Z", ended_at="2026-12-02T16:00:01.511Z",
                  duration_ms=1011.0, cost_usd=0.0012),
        TaskState("b#c", parent_task_id="p", started_at="2026-12-02T16:00:00.500Z"),
        TaskState("d", parent_task_id="p", status="failed", ended_at="2026-12-02T16:00:00.5Z"),
        TaskState("e", parent_task_id="p", started_at="2026-12-02T16:00:00.5001+00:00"),
        TaskState("f", parent_task_id="p", started_at="2026-12-02T16:00:00.500Z",
                  recorded="2026-12-02T16:00:00.500Z#2026-12-02T16:00:00.900Z#000007")]
    for span in spans:
        row = span_row(span)
        back = task_from_span({"row": row, "ssk": f"{span.sort_ts}#{span.task_id}"}, "r")
        assert back == TaskState(span.task_id, span.parent_task_id, span.name, span.status,
                                 duration_ms=span.duration_ms, cost_usd=span.cost_usd,
                                 started_at=span.started_at, ended_at=span.ended_at,
                                 run_id="r", recorded=span.recorded), row
    assert span_row(spans[0]) == '["success","p","search",0,1011,1011.0,0.0012]'
    assert span_row(spans[-1]).endswith(',[0,400,7]]')
