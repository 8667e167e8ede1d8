"""What observability costs the agent: caller-thread time per task, and how much arrives.

Compares, side by side in one run and against one loopback sink (a separate process):

* ``ours``      -- this repository's ``bench`` SDK (``agent.span`` + two logs + a cost)
* ``baseline``  -- another tree of the same SDK (``--baseline-sdk DIR``, the directory holding its
                   ``bench`` package), e.g. the last release's, for a change's before and after
* ``0.1.3``     -- the original ``bench-observe`` 0.1.3 client (``task_ctx``, same calls), installed
                   into an isolated directory because it is also called ``bench``
* ``otel``      -- the OpenTelemetry SDK: one span with the same data as attributes and events,
                   ``BatchSpanProcessor`` and the OTLP/HTTP exporter, default settings

Each SDK runs in a fresh interpreter. A task is: start, two logs, a cost, end. Tasks run in bursts
with a pause between them (agents wait on LLMs most of the time); only the time spent inside the
SDK calls on the agent's thread is counted. The sink then reports how many of the sent events
(spans for OTel) arrived, and how many drops the SDK reported; what our SDK's exit could not
deliver in time is counted from its spool (a folder of the run's own), where it waits for the
next process: received, dropped and spooled add up to what was sent. Every configuration runs
with the sink answering at once and with a 100 ms delay per request; with ``--rounds`` each is
measured that many times, the SDKs alternating, and the medians are compared.

    python tests/perf/sdk_overhead.py                    # 20k tasks, about 3 minutes
    python tests/perf/sdk_overhead.py --tasks 2000       # quick look
    git -C . archive 3904af4 sdk | tar -x -C /tmp/old    # the last release's SDK, then:
    python tests/perf/sdk_overhead.py --sdks ours,baseline --baseline-sdk /tmp/old/sdk --rounds 5

``--spool N`` measures the spool instead: N events undelivered at exit (the server down), the
bytes on disk, the time the exit takes to write them and the time the next process takes to
claim and read them back.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
SDKS = ("ours", "baseline", "0.1.3", "otel")


# ── the sink (its own process, so its CPU does not compete with the measured agent) ──────────

class SinkState:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latency = 0.0
        self.reset()

    def reset(self) -> None:
        self.ids: set[str] = set()
        self.events = 0
        self.spans = 0
        self.requests = 0
        self.dropped_reported = 0


def serve_sink() -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

    state = SinkState()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, body: bytes, content_type: str = "application/json") -> None:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802
            with state.lock:
                stats = {"ids": len(state.ids), "events": state.events, "spans": state.spans,
                         "requests": state.requests, "dropped_reported": state.dropped_reported}
            self._send(json.dumps(stats).encode())

        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.headers.get("Content-Encoding") == "gzip":
                raw = gzip.decompress(raw)
            if self.path == "/reset":
                with state.lock:
                    state.reset()
                    state.latency = json.loads(raw)["latency"]
                return self._send(b"{}")
            time.sleep(state.latency)
            if self.path == "/v1/traces":
                request = ExportTraceServiceRequest.FromString(raw)
                spans = sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
                with state.lock:
                    state.spans += spans
                    state.requests += 1
                return self._send(ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf")
            body = json.loads(raw)
            with state.lock:
                state.requests += 1
                state.events += len(body["events"])
                state.ids.update(e["id"] for e in body["events"])
                state.dropped_reported += body.get("dropped", 0)
            self._send(json.dumps({"accepted": len(body["events"]), "duplicates": 0}).encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


# ── workers: one SDK, one fresh interpreter ────────────────────────────────────────────────

def run_ours(url: str, tasks: int, burst: int, pause: float) -> dict[str, Any]:
    import bench

    expected = os.environ.get("BENCH_PERF_SDK_TREE")
    assert not expected or bench.__file__.startswith(expected), f"{bench.__file__} is not under {expected}"
    agent = bench.observe(api_key="bk_bench", agent="perf", endpoint=url)
    caller = 0.0
    for start in range(0, tasks, burst):
        t0 = time.perf_counter()
        for i in range(start, min(start + burst, tasks)):
            with agent.span("task", {"i": i}) as t:
                t.log("step", 1)
                t.log("found", [1, 2, 3])
                t.cost(0.001)
        caller += time.perf_counter() - t0
        time.sleep(pause)
    agent.shutdown_sync(timeout=120)
    return {"caller_s": caller, "sent": tasks * 5}


def run_original(url: str, tasks: int, burst: int, pause: float) -> dict[str, Any]:
    import bench

    assert bench.__version__ in ("0.1.2", "0.1.3"), "PYTHONPATH must hold the original client"
    agent = bench.observe(api_key="bk_bench", agent="perf", endpoint=url + "/ingest")

    async def main() -> float:
        caller = 0.0
        for start in range(0, tasks, burst):
            t0 = time.perf_counter()
            for i in range(start, min(start + burst, tasks)):
                async with agent.task_ctx("task", {"i": i}) as t:
                    t.log("step", 1)
                    t.log("found", [1, 2, 3])
                    t.cost(0.001)
            caller += time.perf_counter() - t0
            await asyncio.sleep(pause)
        await agent.flush()
        return caller

    return {"caller_s": asyncio.run(main()), "sent": tasks * 5}


def run_otel(url: str, tasks: int, burst: int, pause: float) -> dict[str, Any]:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url + "/v1/traces")))
    tracer = provider.get_tracer("perf")
    caller = 0.0
    for start in range(0, tasks, burst):
        t0 = time.perf_counter()
        for i in range(start, min(start + burst, tasks)):
            with tracer.start_as_current_span("task", attributes={"input": json.dumps({"i": i})}) as span:
                span.add_event("log", {"label": "step", "value": 1})
                span.add_event("log", {"label": "found", "value": json.dumps([1, 2, 3])})
                span.set_attribute("cost_usd", 0.001)
        caller += time.perf_counter() - t0
        time.sleep(pause)
    provider.force_flush(120_000)
    provider.shutdown()
    return {"caller_s": caller, "sent": tasks}


WORKERS = {"ours": run_ours, "baseline": run_ours, "0.1.3": run_original, "otel": run_otel}


def run_spool(events: int) -> dict[str, Any]:
    """``events`` recorded with the server down, then the exit's shutdown: the spool written
    (timed around the write itself), then read back as the next process does."""
    import bench
    from bench import _sender

    with socket.socket() as closed:  # a port nothing listens on: connections are refused
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
    write_s: list[float] = []
    keep = _sender.Sender._keep_undelivered

    def timed(self: Any, left: Any) -> None:
        start = time.perf_counter()
        keep(self, left)
        write_s.append(time.perf_counter() - start)

    _sender.Sender._keep_undelivered = timed  # type: ignore[method-assign]
    agent = bench.observe(api_key="bk_bench", agent="perf", endpoint=url, max_queue_size=2 * events)
    for i in range(events // 5):
        with agent.span("task", {"i": i}) as t:
            t.log("step", 1)
            t.log("found", [1, 2, 3])
            t.cost(0.001)
    agent.shutdown_sync(timeout=0)
    spool = agent._sender._spool
    sizes = [f.stat().st_size for f in Path(spool.location()).iterdir()]
    start = time.perf_counter()
    loaded = [spool.load(claim) for claim in map(spool.claim, spool.waiting()) if claim is not None]
    read_s = time.perf_counter() - start
    return {"events": events, "spooled": sum(len(x.events) for x in loaded if x is not None),
            "files": len(sizes), "bytes": sum(sizes), "write_ms": sum(write_s) * 1000, "read_ms": read_s * 1000}


def measure_spool(events: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        env = {**os.environ, "BENCH_SPOOL_DIR": directory, "PYTHONPATH": ""}
        env.pop("BENCH_DISABLED", None)
        done = subprocess.run([sys.executable, str(HERE), "--spool-worker", str(events)], env=env,
                              capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"spool worker failed:\n{done.stderr}")
    r = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{r['events']} events undelivered at exit: {r['spooled']} spooled in {r['files']} file(s), "
          f"{r['bytes']:,} bytes ({r['bytes'] / r['events']:.0f} per event); "
          f"written in {r['write_ms']:.1f} ms, claimed and read back in {r['read_ms']:.1f} ms")


# ── orchestration ──────────────────────────────────────────────────────────────────────────

def install_original() -> str:
    target = tempfile.mkdtemp(prefix="bench-observe-0.1.3-")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", target, "bench-observe==0.1.3"],
        check=True,
    )
    return target


def sink_call(url: str, path: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
    data = json.dumps(payload).encode() if payload is not None else None
    with urllib.request.urlopen(urllib.request.Request(url + path, data=data), timeout=30) as reply:
        return json.loads(reply.read())


def spooled_events(directory: Path) -> int:
    """Events an exit left in the spool (``bench._spool``'s files: a header line, then one
    event a line), for the next process sending to the same endpoint."""
    return sum(len(f.read_bytes().split(b"\n")) - 2 for f in directory.glob("*.jsonl"))


def measure(sdk: str, url: str, tasks: int, burst: int, pause: float, latency: float,
            paths: dict[str, str]) -> dict[str, Any]:
    sink_call(url, "/reset", {"latency": latency})
    with tempfile.TemporaryDirectory() as spool:
        env = {**os.environ, "PYTHONPATH": paths.get(sdk, ""), "BENCH_PERF_SDK_TREE": paths.get(sdk, ""),
               "BENCH_SPOOL_DIR": spool}
        env.pop("BENCH_DISABLED", None)
        args = [sys.executable, str(HERE), "--worker", sdk, "--url", url, "--tasks", str(tasks),
                "--burst", str(burst), "--pause-ms", str(pause * 1000)]
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=900)
        spooled = spooled_events(Path(spool))
    if done.returncode != 0:
        raise RuntimeError(f"{sdk} worker failed:\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    stats = sink_call(url, "/")
    received = stats["spans"] if sdk == "otel" else stats["ids"]
    return {
        "sdk": sdk, "latency_ms": latency * 1000, "tasks": tasks,
        "us_per_task": result["caller_s"] / tasks * 1e6,
        "sent": result["sent"], "received": received, "requests": stats["requests"],
        "dropped_reported": stats["dropped_reported"], "spooled": spooled,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--original-tasks-with-latency", type=int, default=1_000,
                        help="0.1.3 waits on its own POSTs (about 10 ms a task at 100 ms latency), so fewer tasks")
    parser.add_argument("--burst", type=int, default=100, help="tasks back to back between pauses")
    parser.add_argument("--pause-ms", type=float, default=20.0,
                        help="pause between bursts (the agent waiting on an LLM)")
    parser.add_argument("--latencies-ms", default="0,100")
    parser.add_argument("--sdks", default="ours,0.1.3,otel", help=f"some of {','.join(SDKS)}")
    parser.add_argument("--baseline-sdk", metavar="DIR", help="the directory holding the baseline's bench package")
    parser.add_argument("--rounds", type=int, default=1, help="measurements of each, the SDKs alternating")
    parser.add_argument("--spool", type=int, metavar="EVENTS", help="measure the spool with this many events")
    parser.add_argument("--worker", choices=SDKS, help=argparse.SUPPRESS)
    parser.add_argument("--spool-worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--sink", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.sink:
        return serve_sink()
    if args.worker:
        print(json.dumps(WORKERS[args.worker](args.url, args.tasks, args.burst, args.pause_ms / 1000)))
        return None
    if args.spool_worker:
        print(json.dumps(run_spool(args.spool_worker)))
        return None
    if args.spool:
        return measure_spool(args.spool)

    sdks = args.sdks.split(",")
    if "baseline" in sdks and not args.baseline_sdk:
        parser.error("--sdks baseline needs --baseline-sdk DIR")
    paths = {"baseline": str(Path(args.baseline_sdk or ".").resolve())}
    if "0.1.3" in sdks:
        paths["0.1.3"] = install_original()
    sink = subprocess.Popen([sys.executable, str(HERE), "--sink"], stdout=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{sink.stdout.readline().strip()}"
        rows = []
        for latency_ms in (float(x) for x in args.latencies_ms.split(",")):
            for _ in range(args.rounds):
                for sdk in sdks:
                    tasks = args.original_tasks_with_latency if sdk == "0.1.3" and latency_ms > 0 else args.tasks
                    row = measure(sdk, url, tasks, args.burst, args.pause_ms / 1000, latency_ms / 1000, paths)
                    rows.append(row)
                    print(f"  {sdk:8s} latency {latency_ms:5.0f} ms: {row['us_per_task']:8.1f} µs/task, "
                          f"received {row['received']}/{row['sent']}", file=sys.stderr, flush=True)
    finally:
        sink.terminate()
    report(rows)


def report(rows: list[dict[str, Any]]) -> None:
    print(f"\n{'sdk':8s} {'sink latency':>12s} {'tasks':>6s} {'µs/task (caller)':>17s} "
          f"{'received/sent':>15s} {'requests':>8s} {'drops reported':>14s} {'spooled':>7s}")
    for r in rows:
        print(f"{r['sdk']:8s} {r['latency_ms']:>9.0f} ms {r['tasks']:>6d} {r['us_per_task']:>17.1f} "
              f"{r['received']:>7d}/{r['sent']:<7d} {r['requests']:>8d} {r['dropped_reported']:>14d} "
              f"{r['spooled']:>7d}")
    by: dict[tuple[str, float], list[float]] = {}
    for r in rows:
        by.setdefault((r["sdk"], r["latency_ms"]), []).append(r["us_per_task"])
    print()
    for latency in sorted({r["latency_ms"] for r in rows}):
        ours = by.get(("ours", latency))
        if ours is None:
            continue
        for other in ("baseline", "0.1.3", "otel"):
            if (other, latency) in by:
                theirs = by[(other, latency)]
                print(f"at {latency:.0f} ms: ours / {other} = {statistics.median(ours) / statistics.median(theirs):.3f}"
                      f"  (medians of {len(ours)} and {len(theirs)}: {statistics.median(ours):.1f} and "
                      f"{statistics.median(theirs):.1f} µs/task)")


if __name__ == "__main__":
    main()
