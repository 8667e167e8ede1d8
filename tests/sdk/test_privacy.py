"""What leaves the process: redaction, capture switches, odd values and sampling."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import zlib
from typing import Any

from bench._privacy import REDACTION_FAILED
from bench._serialize import MAX_EVENT_BYTES, REPR_CAP
from conftest import HANG_GUARD

SECRET = "sk-SECRET-123"


def scrub(value: Any) -> Any:
    """A typical redactor: recursive, masks one pattern."""
    if isinstance(value, str):
        return value.replace(SECRET, "[masked]")
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def leak_everywhere(agent) -> None:
    """Put the secret in every field a user can reach, through every API."""

    async def child(t):
        t.log("child-log", [SECRET])
        return {"answer": SECRET}

    async def parent(t):
        t.log("prompt", SECRET)
        t.metadata({"user": SECRET})
        t.cost(0.01, {"source": "openai", "note": SECRET})
        await t.subtask("child", {"q": SECRET}, child)
        agent.event("tool.use", {"arg": SECRET})
        return SECRET

    async def failing(t):
        raise RuntimeError(f"failed with {SECRET}")

    async def main() -> None:
        await agent.task("parent", {"key": SECRET}, parent)
        with contextlib.suppress(RuntimeError):
            await agent.task("failing", SECRET, failing)
        async with agent.task_ctx("ctx", SECRET) as t:
            t.set_output(SECRET)

    asyncio.run(main())
    with agent.span("sync", {"nested": {"deep": [SECRET]}}) as t:
        t.log("x", SECRET)
    agent.event("custom", SECRET)
    agent._push({"id": "raw1", "kind": "task.start", "task_id": "lc1", "name": "llm", "input": SECRET, "ts": "t"})
    assert agent.flush_sync(HANG_GUARD)


def test_redact_applies_to_every_field(make_agent, memory) -> None:
    agent = make_agent(redact=scrub)
    leak_everywhere(agent)
    wire = b"".join(memory.raw).decode()
    assert SECRET not in wire
    assert wire.count("[masked]") >= 14
    ends = memory.ends()
    assert ends["parent"]["cost_breakdown"][0] == {"source": "openai", "note": "[masked]", "amount_usd": 0.01}
    assert ends["failing"]["status"] == "failed"


def test_capture_switches_drop_inputs_outputs_and_error_text(make_agent, memory) -> None:
    agent = make_agent(capture_input=False, capture_output=False)
    leak_everywhere(agent)
    for start in memory.kind("task.start"):
        assert start["input"] is None
    for end in memory.kind("task.end"):
        assert end["output"] is None
    assert memory.ends()["failing"]["status"] == "failed"
    logs = [e["data"].get("value") for e in memory.kind("task.log") if e["data"]["label"] != "cost"]
    assert SECRET in logs, "logs are governed by redact, not by the capture switches"


def test_a_failing_redactor_fails_closed(make_agent, memory, caplog) -> None:
    def broken(value: Any) -> Any:
        raise RuntimeError("oops")

    agent = make_agent(redact=broken)
    leak_everywhere(agent)
    wire = b"".join(memory.raw).decode()
    assert SECRET not in wire
    assert REDACTION_FAILED in wire
    assert caplog.text.count("redact hook raised") == 1


class Weird:
    def __repr__(self) -> str:
        return "W" * (REPR_CAP * 5)


class Broken:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_non_json_values_become_capped_reprs(make_agent, memory) -> None:
    agent = make_agent()
    cyclic: dict[str, Any] = {"name": "loop"}
    cyclic["self"] = cyclic
    with agent.span("odd", {"obj": Weird(), "broken": Broken(), "when": datetime.date(2026, 1, 2)}) as t:
        t.log("nan", float("nan"))
        t.log("cycle", cyclic)
        t.log("tuple-keys", {(1, 2): "v", "set": {3}})
        t.log("bytes", b"\x00\x01")
        t.set_output(object())
    assert agent.flush_sync(HANG_GUARD)
    start = memory.kind("task.start")[0]
    obj = start["input"]["obj"]
    assert obj.startswith("WWW") and len(obj) < REPR_CAP + 100 and "truncated" in obj
    assert start["input"]["broken"] == "<unrepresentable Broken>"
    assert start["input"]["when"] == "2026-01-02"
    logs = {e["data"]["label"]: e["data"]["value"] for e in memory.kind("task.log")}
    assert logs["nan"] == "nan"
    assert logs["cycle"] == {"name": "loop", "self": {"name": "loop", "self": "<cycle>"}}  # top level was copied
    assert logs["tuple-keys"] == {"(1, 2)": "v", "set": [3]}
    assert logs["bytes"] == repr(b"\x00\x01")
    assert memory.ends()["odd"]["output"].startswith("<object object")


def test_oversized_values_are_truncated_not_fatal(make_agent, memory) -> None:
    agent = make_agent()
    with agent.span("huge", "x" * (MAX_EVENT_BYTES * 3)) as t:
        t.log("many", list(range(200_000)))
    assert agent.flush_sync(HANG_GUARD)
    start = memory.kind("task.start")[0]
    assert start["input"].startswith("xxx") and "truncated" in start["input"]
    assert len(json.dumps(start)) <= MAX_EVENT_BYTES
    log = memory.kind("task.log")[0]
    assert "omitted" in log["data"] and len(json.dumps(log)) <= MAX_EVENT_BYTES
    assert memory.ends()["huge"]["status"] == "success"


def test_sampling_keeps_or_drops_whole_runs_by_root_id(make_agent, memory) -> None:
    agent = make_agent(sample_rate=0.3)
    roots = 200
    for i in range(roots):
        with agent.span("root", i), agent.span("child") as c:
            c.log("x", 1)
            agent.event("tool.use", None)
    assert agent.flush_sync(HANG_GUARD)
    ends = memory.kind("task.end")
    kept_roots = {e["task_id"] for e in ends if e["name"] == "root"}
    children = [e for e in ends if e["name"] == "child"]
    assert 0 < len(kept_roots) < roots
    for root_id in kept_roots:
        assert zlib.crc32(root_id.encode()) < 0.3 * 2**32
    assert {c["parent_task_id"] for c in children} == kept_roots, "children follow their root"
    assert len(memory.kind("tool.use")) == len(kept_roots)
    assert len(memory.kind("task.log")) == len(kept_roots)


def test_sample_rate_zero_sends_nothing_but_runs_everything(make_agent, memory) -> None:
    agent = make_agent(sample_rate=0)

    async def work(t):
        t.log("x", 1)
        return 42

    assert asyncio.run(agent.task("t", None, work)) == 42
    assert agent.flush_sync(HANG_GUARD)
    assert memory.events == []
