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
