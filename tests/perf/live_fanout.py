"""Live-feed fan-out: time from sending a batch to `POST /ingest` until each of 100 open
WebSockets watching the agent (`/live/{login}/{slug}` on the local server) has it.

    python tests/perf/live_fanout.py [--watchers 100] [--rounds 200]

The server runs in its own process (`bench-server serve`), as `make run` runs it. Each round
sends one task (start and end, as the SDK sends it) and waits until every watcher has it before
the next, so the figures are latency, not queueing. Not a test: the numbers depend on the
machine. Goal: p99 under 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import websockets

SLUG = "fanout-agent"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    server = subprocess.Popen([sys.executable, "-m", "bench_core.cli", "serve", "--port", str(port),
                               "--data-dir", str(data_dir)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env={**os.environ, "BENCH_WORKERS": "1"})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).raise_for_status()
            return server
        except httpx.HTTPError:
            time.sleep(0.1)
    server.kill()
    raise RuntimeError("the server did not start")


def create_key(data_dir: Path, login: str) -> str:
    return subprocess.run([sys.executable, "-m", "bench_core.cli", "keys", "create", "--login",
                           login, "--data-dir", str(data_dir)], capture_output=True, text=True,
                          check=True).stdout.strip()


def task(round_no: int) -> list[dict[str, object]]:
    tid = f"r{round_no}-{uuid.uuid4().hex[:8]}"
    ts = "2026-12-02T16:00:00.000Z"
    return [{"id": f"{tid}-s", "kind": "task.start", "ts": ts, "task_id": tid, "name": "search",
             "input": {"query": "fan-out"}},
            {"id": f"{tid}-e", "kind": "task.end", "ts": ts, "task_id": tid, "name": "search",
             "status": "success", "output": [1, 2, 3], "duration_ms": 120}]


async def measure(url: str, key: str, login: str, watchers: int, rounds: int) -> list[float]:
    ws_url = url.replace("http://", "ws://") + f"/live/{login}/{SLUG}"
    async with httpx.AsyncClient(base_url=url, headers={"X-Bench-Key": key}) as client:
        (await client.post("/ingest", json={"agent_slug": SLUG, "events": task(-1)})).raise_for_status()
        sockets = [await websockets.connect(ws_url, additional_headers={"Origin": url})
                   for _ in range(watchers)]
        for ws in sockets:
            await ws.recv()  # hello
        samples: list[float] = []
        try:
            for round_no in range(rounds):
                events = task(round_no)
                sent = time.perf_counter()
                post = asyncio.create_task(client.post("/ingest", json={"agent_slug": SLUG,
                                                                        "events": events}))
                arrivals = await asyncio.gather(*(until(ws, events[0]["id"]) for ws in sockets))
                (await post).raise_for_status()
                samples += [(arrived - sent) * 1000 for arrived in arrivals]
        finally:
            await asyncio.gather(*(ws.close() for ws in sockets))
    return samples


async def until(ws: websockets.ClientConnection, event_id: object) -> float:
    """When `ws` got the message carrying `event_id`."""
    while True:
        message = json.loads(await asyncio.wait_for(ws.recv(), 30))
        if any(e["id"] == event_id for e in message.get("events", ())):
            return time.perf_counter()


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--watchers", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir, port = Path(tmp), free_port()
        login = "fanout"
        key = create_key(data_dir, login)
        server = start_server(data_dir, port)
        try:
            samples = asyncio.run(measure(f"http://127.0.0.1:{port}", key, login, args.watchers,
                                          args.rounds))
        finally:
            server.terminate()
            server.wait(timeout=20)
    result = {"watchers": args.watchers, "rounds": args.rounds, "deliveries": len(samples),
              "p50_ms": round(percentile(samples, 50), 2),
              "p99_ms": round(percentile(samples, 99), 2),
              "max_ms": round(max(samples), 2), "mean_ms": round(statistics.fmean(samples), 2),
              "cpus": os.cpu_count()}
    print(f"ingest -> delivery on {args.watchers} WebSockets of one agent, {args.rounds} batches: "
          f"p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms, max {result['max_ms']} ms "
          f"(goal: p99 < 100 ms)")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
