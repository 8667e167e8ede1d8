"""Benchmark runs to submit in tests: the example agent's answers, hashed by the SDK's code."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

from bench._benchmark import agent_input, call_agent, value_hash

from examples.benchmark_agent import answer

REPO = Path(__file__).resolve().parents[1]
SUITE = "grounded-research-v1"
SUITE_DIR = REPO / "benchmarks" / SUITE


def suite_document() -> dict[str, Any]:
    return {"manifest": json.loads((SUITE_DIR / "manifest.json").read_text()),
            "cases": json.loads((SUITE_DIR / "cases.json").read_text())}


def run_body(slug: str, repeats: int = 2, document: dict[str, Any] | None = None,
             **extra: Any) -> dict[str, Any]:
    """A complete, honest run of the example agent (passes some cases, fails some, crashes on
    one), as `bench benchmark run` submits it."""
    document = document or suite_document()
    attempts = []
    for repeat in range(repeats):
        for case in document["cases"]:
            outcome = call_agent(answer, agent_input(document, case), None)
            attempts.append({"case_id": case["id"], "repeat": repeat, "status": outcome.status,
                             "output": outcome.output, "output_hash": value_hash(outcome.output),
                             "error": outcome.error, "duration_ms": 10.0 + repeat, "cost_usd": 0.001})
    return {"agent_slug": slug, "suite_hash": value_hash(document), "repeats": repeats,
            "attempts": attempts, **extra}


def with_output(body: dict[str, Any], index: int, output: Any) -> dict[str, Any]:
    """`body` with attempt `index` answering `output` (hash updated, as an honest client would)."""
    body = copy.deepcopy(body)
    body["attempts"][index].update(status="ok", output=output, output_hash=value_hash(output), error=None)
    return body


def new_slug() -> str:
    return "b" + uuid.uuid4().hex[:10]


def graded_run(base_url: str, accepted: Any, key: str | None = None) -> dict[str, Any]:
    """The run a submission (`accepted`: its HTTP response) was answered 202 for, once the
    server has graded it in the background: what `bench benchmark run` waits for."""
    import httpx

    from tests.conftest import poll

    assert accepted.status_code == 202, accepted.text
    body = accepted.json()
    assert body["status"] in ("pending", "grading") and body["id"] == body["run_id"]
    assert accepted.headers["location"] == body["url"]
    headers = {"X-Bench-Key": key} if key else {}
    run: dict[str, Any] = poll(
        lambda: httpx.get(f"{base_url}/api/benchmarks/runs/{body['id']}", headers=headers,
                          timeout=30).json(),
        lambda r: r.get("status") not in ("pending", "grading"))
    return run
