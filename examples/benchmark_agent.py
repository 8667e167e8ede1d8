"""A tiny extractive "research agent" for the benchmark runner: no model, fully deterministic.

    BENCH_KEY=bk_... bench benchmark run grounded-research-v1 \\
        --agent examples.benchmark_agent:answer --agent-slug extractive --repeats 3

It answers by quoting every source it was given, each with its citation. That is grounded, so
it passes the cases whose facts are stated in the sources; it fails those that need a step of
its own (a calculation, a conclusion across sources, saying what the sources leave out); and it
refuses questions about times in UTC by raising, so one case is recorded as a crash.
"""

from __future__ import annotations

from typing import Any


def answer(case: dict[str, Any]) -> str:
    if "UTC" in case["question"]:
        raise ValueError("time-zone arithmetic is not supported by this agent")
    quoted = [f"{source['text']} [{source['id']}]" for source in case["sources"]]
    return "According to the sources:\n" + "\n".join(quoted)
