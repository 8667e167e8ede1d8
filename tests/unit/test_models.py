from __future__ import annotations

import json

import pytest
from bench_core.domain.models import (
    MAX_COST_USD,
    USAGE_FIELDS,
    IngestBatch,
    TaskState,
    Usage,
    WireEvent,
    from_fields,
)
from pydantic import ValidationError

from tests.factories import batch, ev, task_events


def test_the_original_clients_batch_parses() -> None:
    parsed = IngestBatch.model_validate(batch("My-Agent", task_events("t1", cost=0.004),
                                              tools=["search"]))
    assert parsed.agent_slug == "my-agent" and parsed.tools == ["search"]
    assert [e.kind for e in parsed.events] == ["task.start", "task.log", "task.end"]


def test_error_status_is_read_as_failed_and_naive_times_as_utc() -> None:
    event = WireEvent.model_validate(ev("task.end", "t1", status="error",
                                        ts="2026-12-02T16:12:28.123"))
    assert event.status == "failed" and event.ts.utcoffset().total_seconds() == 0


@pytest.mark.parametrize("bad, where", [
    ({"status": "maybe"}, "status"),
    ({"ts": "yesterday"}, "ts"),
    ({"cost_usd": -1}, "cost_usd"),
    ({"duration_ms": "slow"}, "duration_ms"),
    ({"cost_breakdown": []}, "cost_breakdown"),
    ({"cost_usd": 1_000_000.01}, "cost_usd"),
    ({"duration_ms": -1}, "duration_ms"),
    ({"duration_ms": 31 * 86_400_000}, "duration_ms"),
])
def test_bad_fields_are_named(bad: dict, where: str) -> None:
    with pytest.raises(ValidationError) as info:
        WireEvent.model_validate({**ev("task.end", "t1", status="success"), **bad})
    assert where in {str(loc) for e in info.value.errors() for loc in e["loc"]}


def test_task_events_need_a_task_id_and_ends_need_a_status() -> None:
    with pytest.raises(ValidationError, match="task_id"):
        WireEvent.model_validate(ev("task.start"))
    with pytest.raises(ValidationError, match="status"):
        WireEvent.model_validate(ev("task.end", "t1"))


def test_custom_events_need_no_task() -> None:
    assert WireEvent.model_validate(ev("tool.use", data={"tool": "search"})).task_id is None


@pytest.mark.parametrize("slug", ["", "-x", "a b", "x" * 65, "ü"])
def test_bad_slugs_are_refused(slug: str) -> None:
    with pytest.raises(ValidationError):
        IngestBatch.model_validate(batch(slug, []))


@pytest.mark.parametrize("amount", [-0.01, 1e7, 1e300])
def test_a_cost_log_out_of_range_is_refused(amount: float) -> None:
    with pytest.raises(ValidationError) as info:
        WireEvent.model_validate(ev("task.log", "t1", data={"label": "cost", "cost_usd": amount}))
    [error] = info.value.errors()
    assert error["loc"] == ("data",) and "cost_usd" in error["msg"]


def test_the_largest_cost_and_duration_are_accepted() -> None:
    event = WireEvent.model_validate(ev("task.end", "t1", status="success", cost_usd=1_000_000,
                                        duration_ms=30 * 86_400_000))
    assert (event.cost_usd, event.duration_ms) == (1_000_000, 30 * 86_400_000)
    log = WireEvent.model_validate(ev("task.log", "t1", data={"label": "cost", "cost_usd": 1e6}))
    assert log.data["cost_usd"] == 1e6
    assert WireEvent.model_validate(ev("custom", data={"label": "cost", "cost_usd": -5}))


def test_the_sdk_holds_costs_to_the_servers_limit() -> None:
    from bench._client import MAX_TASK_COST_USD

    assert MAX_TASK_COST_USD == MAX_COST_USD


def test_from_fields_builds_what_the_constructor_builds_from_decoded_names() -> None:
    """Stored fields come back from a JSON parser with names that are not interned: the
    instance is the constructor's, unknown names dropped, factories called per instance."""
    decoded = json.loads('{"task_id": "t1", "name": "plan", "status": "failed", '
                         '"duration_ms": 5.0, "input": {"q": 1}, "from_a_newer_bench": 1}')
    task = from_fields(TaskState, decoded)
    assert task == TaskState(task_id="t1", name="plan", status="failed", duration_ms=5.0,
                             input={"q": 1})
    assert not hasattr(task, "from_a_newer_bench")
    other = from_fields(TaskState, {"task_id": "t2"})
    assert other.logs == [] and other.logs is not from_fields(TaskState, {"task_id": "t3"}).logs
    assert (other.status, other.version, other.evidence) == ("running", 0, None)
    with pytest.raises(TypeError, match="task_id"):
        from_fields(TaskState, {"name": "nameless"})


def test_usage_read_back_keeps_its_fields_in_order() -> None:
    usage = Usage.from_dict(json.loads('{"calls": 2, "cost_usd": 0.5, "input_tokens": 7}'))
    assert usage == Usage(cost_usd=0.5, input_tokens=7, calls=2)
    assert list(usage.to_dict()) == list(USAGE_FIELDS)
    assert usage.to_dict() == Usage(cost_usd=0.5, input_tokens=7, calls=2).to_dict()
