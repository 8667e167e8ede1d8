"""An async research agent, observed with Bench. No LLM provider key needed: the model calls
are simulated with realistic latencies, token counts, costs and occasional failures.

    BENCH_KEY=bk_... BENCH_ENDPOINT=http://127.0.0.1:8000 python examples/research_agent.py --runs 20

Each run plans, searches three sources in parallel (``asyncio.gather``: the subtasks find their
parent by themselves), reads the results and writes an answer with citations.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random

import bench

PRICE_PER_MTOK = {"input": 2.50, "output": 10.00}  # a typical frontier-model price list
QUESTIONS = [
    "How do solid-state batteries differ from lithium-ion?",
    "What caused the 2008 financial crisis?",
    "Which programming languages are memory safe and why?",
    "How does CRISPR gene editing work?",
    "What is the current evidence on intermittent fasting?",
    "Why is the sky blue at noon and red at sunset?",
    "How do large language models handle long contexts?",
    "What are the trade-offs of nuclear vs. solar power?",
]
SOURCES = ["wikipedia", "arxiv", "news", "textbook", "blog"]


class ProviderError(RuntimeError):
    """What a flaky model provider raises now and then."""


async def call_llm(task: bench.BenchTask, purpose: str, prompt_tokens: int, rng: random.Random) -> str:
    """A stand-in for a chat completion: waits like one, costs like one, sometimes fails."""
    await asyncio.sleep(rng.uniform(0.15, 0.6))
    if rng.random() < 0.04:
        raise ProviderError("model provider returned 529 overloaded")
    output_tokens = rng.randint(80, 700)
    usd = (prompt_tokens * PRICE_PER_MTOK["input"] + output_tokens * PRICE_PER_MTOK["output"]) / 1e6
    task.cost(usd, {"source": "simulated", "model": "sim-4o", "input_tokens": prompt_tokens,
                    "output_tokens": output_tokens})
    task.log(f"{purpose}.tokens", prompt_tokens + output_tokens)
    return f"<{purpose} answer, {output_tokens} tokens>"


async def research(agent: bench.BenchAgent, question: str, rng: random.Random) -> dict[str, object]:
    async with agent.task_ctx("research", {"question": question}) as run:
        async with agent.span("plan", {"question": question}) as plan:
            plan.set_output(await call_llm(plan, "plan", rng.randint(300, 900), rng))

        async def search(source: str) -> str:
            async with agent.span("search", {"source": source, "query": question}) as step:
                await asyncio.sleep(rng.uniform(0.05, 0.35))
                if rng.random() < 0.05:
                    raise TimeoutError(f"{source} did not answer within 10 s")
                hits = rng.randint(0, 8)
                step.log("hits", hits)
                agent.event("tool.use", {"tool": "web_search", "source": source})
                step.set_output({"source": source, "hits": hits})
                return source

        found = await asyncio.gather(*(search(s) for s in rng.sample(SOURCES, 3)), return_exceptions=True)
        sources = [s for s in found if isinstance(s, str)]
        run.log("sources", len(sources))
        if not sources:
            raise RuntimeError("no source answered; cannot ground the answer")

        async with agent.span("answer", {"sources": sources}) as answer:
            text = await call_llm(answer, "answer", rng.randint(1500, 6000), rng)
            answer.set_output(text)
        run.metadata({"sources": sources, "depth": len(sources)})
        result = {"answer": text, "citations": sources}
        run.set_output(result)
        return result


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--agent", default=os.environ.get("BENCH_AGENT", "research-agent"))
    parser.add_argument("--concurrency", type=int, default=5)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()

    agent = bench.observe(agent=args.agent, display_name="Research Agent (example)", model="sim-4o",
                          framework="custom", architecture="plan-search-answer", tools=["web_search"])
    rng = random.Random(args.seed)
    limit = asyncio.Semaphore(args.concurrency)
    outcomes = {"success": 0, "failed": 0}

    async def one(i: int) -> None:
        async with limit:
            try:
                await research(agent, rng.choice(QUESTIONS), random.Random(rng.random()))
                outcomes["success"] += 1
            except Exception:  # noqa: BLE001 - failures are part of the demo; Bench records them
                outcomes["failed"] += 1

    await asyncio.gather(*(one(i) for i in range(args.runs)))
    delivered = await agent.flush(timeout=30)
    server = os.environ.get("BENCH_ENDPOINT", "http://127.0.0.1:8000")
    print(f"{args.runs} runs ({outcomes['success']} ok, {outcomes['failed']} failed) "
          f"{'delivered to' if delivered else 'NOT delivered to'} {server} as agent {args.agent!r}")
    if not delivered:
        raise SystemExit(1)


if __name__ == "__main__":
    asyncio.run(main())
