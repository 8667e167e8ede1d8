"""A synchronous tool-using agent, observed with Bench. No LLM provider key needed: the model
and its tools are simulated with realistic latencies, costs and occasional failures.

    BENCH_KEY=bk_... BENCH_ENDPOINT=http://127.0.0.1:8000 python examples/tool_agent.py --runs 20

Plain sync code: ``agent.span`` as a context manager and as a decorator. Runs execute on a
thread pool; each run is a root task and its steps nest under it on their own.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from concurrent.futures import ThreadPoolExecutor

import bench

agent = bench.observe(agent=os.environ.get("BENCH_AGENT", "tool-agent"), display_name="Tool Agent (example)",
                      model="sim-mini", framework="custom", architecture="react",
                      tools=["calculator", "weather", "lookup"])

PRICE_PER_MTOK = {"input": 0.15, "output": 0.60}
REQUESTS = [
    "What is 17% of 2,340?",
    "Will it rain in Lisbon tomorrow?",
    "Who maintains the requests library?",
    "Convert 72 F to Celsius.",
    "What's the population of Reykjavik times three?",
]


def think(step: str, rng: random.Random) -> str:
    """A simulated model call: latency, tokens, cost; 3% of calls hit a provider error."""
    task = bench.current_task()
    time.sleep(rng.uniform(0.08, 0.35))
    if rng.random() < 0.03:
        raise RuntimeError("provider error: 500 from the model API")
    prompt, completion = rng.randint(200, 2000), rng.randint(20, 300)
    if task is not None:
        task.cost((prompt * PRICE_PER_MTOK["input"] + completion * PRICE_PER_MTOK["output"]) / 1e6,
                  {"source": "simulated", "model": "sim-mini", "input_tokens": prompt, "output_tokens": completion})
    return rng.choice(["calculator", "weather", "lookup"]) if step == "choose" else f"<answer, {completion} tokens>"


@agent.span("tool")
def call_tool(name: str, query: str, seed: float) -> dict[str, object]:
    rng = random.Random(seed)
    time.sleep(rng.uniform(0.02, 0.25))
    if rng.random() < 0.08:
        raise TimeoutError(f"{name} timed out")
    return {"tool": name, "result": round(rng.uniform(0, 1000), 2)}


def run(request: str, seed: float) -> str:
    rng = random.Random(seed)
    with agent.span("handle-request", {"request": request}) as task:
        with agent.span("choose-tool"):
            tool = think("choose", rng)
        task.log("tool", tool)
        observation = None
        for attempt in range(2):
            try:
                observation = call_tool(tool, request, rng.random())
                break
            except TimeoutError:
                task.log("retry", attempt + 1)
        if observation is None:
            raise RuntimeError(f"{tool} failed twice; giving up")
        with agent.span("respond", {"observation": observation}) as respond:
            answer = think("respond", rng)
            respond.set_output(answer)
        task.set_output(answer)
        return answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    jobs = [(rng.choice(REQUESTS), rng.random()) for _ in range(args.runs)]

    def safe(job: tuple[str, float]) -> bool:
        try:
            run(*job)
            return True
        except Exception:  # noqa: BLE001 - failures are part of the demo; Bench records them
            return False

    with ThreadPoolExecutor(args.workers) as pool:
        results = list(pool.map(safe, jobs))
    delivered = agent.flush_sync(timeout=30)
    print(f"{len(results)} runs ({sum(results)} ok, {len(results) - sum(results)} failed) "
          f"{'delivered to' if delivered else 'NOT delivered to'} {os.environ.get('BENCH_ENDPOINT', 'http://127.0.0.1:8000')}")
    if not delivered:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
