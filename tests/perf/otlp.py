"""OTLP ingest throughput: spans per second through `POST /v1/traces` on the local server (SQLite),
in protobuf and in JSON, side by side with Arize Phoenix (its own server and SQLite) receiving the
same protobuf payloads, in one run. Batches of 512 GenAI spans (an agent invocation with chat and
tool calls per trace), several concurrent sender processes.

    python tests/perf/otlp.py [--batches 40] [--senders 4] [--phoenix PATH]

Phoenix pins dependencies this project cannot share, so it runs from its own virtualenv:
`python -m venv .phoenix && .phoenix/bin/pip install arize-phoenix`, then `--phoenix
.phoenix/bin/phoenix` (default: `phoenix` on PATH; without one its row is skipped, saying why).
Phoenix answers before it writes (a background inserter), so its rate is also measured until its
database holds every span; Bench answers after the write, so its two rates are one.

Not a test: the numbers depend on the machine. Goal: Bench >= 3x Phoenix's stored spans/s.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import multiprocessing as mp
import os
import random
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from bench_core.clock import SYSTEM_CLOCK
from bench_core.domain.keys import new_key
from bench_core.store.sqlite.store import SqliteStore
from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

BATCH = 512
T0 = 1_764_691_200_000_000_000
PROTOBUF, JSON = "application/x-protobuf", "application/json"


# ---- payloads --------------------------------------------------------------------------------


def _attrs(values: dict[str, object]) -> list[KeyValue]:
    def any_value(v: object) -> AnyValue:
        if isinstance(v, int):
            return AnyValue(int_value=v)
        return AnyValue(string_value=str(v))

    return [KeyValue(key=k, value=any_value(v)) for k, v in values.items()]


def export_request(rng: random.Random, spans: int = BATCH) -> bytes:
    """`spans` spans in traces of four: invoke_agent, two chat calls, one tool call."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.extend(_attrs({"service.name": "perf-agent",
                                                      "telemetry.sdk.language": "python"}))
    scope = resource_spans.scope_spans.add()
    scope.scope.name = "perf"
    for _ in range(spans // 4):
        trace, root = rng.randbytes(16), rng.randbytes(8)
        start = T0 + rng.randrange(10**12)
        scope.spans.add(trace_id=trace, span_id=root, name="invoke_agent perf", kind=1,
                        start_time_unix_nano=start, end_time_unix_nano=start + 900_000_000,
                        attributes=_attrs({"gen_ai.operation.name": "invoke_agent",
                                           "gen_ai.agent.name": "Perf Agent"}))
        for i, (name, extra) in enumerate([
                ("chat gpt-4o-mini", {"gen_ai.operation.name": "chat",
                                      "gen_ai.provider.name": "openai",
                                      "gen_ai.request.model": "gpt-4o-mini",
                                      "gen_ai.usage.input_tokens": 1200,
                                      "gen_ai.usage.output_tokens": 80,
                                      "gen_ai.input.messages": '[{"role": "user", "parts": '
                                      '[{"type": "text", "content": "Plan a trip"}]}]'}),
                ("execute_tool search", {"gen_ai.operation.name": "execute_tool",
                                         "gen_ai.tool.name": "search",
                                         "gen_ai.tool.call.arguments": '{"q": "Lisbon"}'}),
                ("chat gpt-4o-mini", {"gen_ai.operation.name": "chat",
                                      "gen_ai.provider.name": "openai",
                                      "gen_ai.request.model": "gpt-4o-mini",
                                      "gen_ai.usage.input_tokens": 2400,
                                      "gen_ai.usage.output_tokens": 200})]):
            child_start = start + (i + 1) * 200_000_000
            scope.spans.add(trace_id=trace, span_id=rng.randbytes(8), parent_span_id=root,
                            name=name, kind=3, start_time_unix_nano=child_start,
                            end_time_unix_nano=child_start + 150_000_000, attributes=_attrs(extra))
    return request.SerializeToString()


def as_json(body: bytes) -> bytes:
    """The same request in OTLP/HTTP JSON: proto3 JSON with hex ids and integer enums."""
    request = MessageToDict(ExportTraceServiceRequest.FromString(body),
                            use_integers_for_enums=True)
    for resource_spans in request["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                for name in ("traceId", "spanId", "parentSpanId"):
                    if name in span:
                        span[name] = base64.b64decode(span[name]).hex()
    return json.dumps(request).encode()


# ---- load ------------------------------------------------------------------------------------


def sender(url: str, content_type: str, headers: dict[str, str], bodies: list[bytes],
           queue: mp.Queue) -> None:
    """One sender process on a keep-alive connection (the stdlib client: a heavier one would eat
    the CPU the server is measured on)."""
    conn = http.client.HTTPConnection(url.removeprefix("http://"), timeout=600)
    queue.put("ready")
    for body in bodies:
        conn.request("POST", "/v1/traces", body=body,
                     headers={**headers, "Content-Type": content_type})
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"/v1/traces answered {response.status}")
    queue.put("done")


def send_all(url: str, content_type: str, headers: dict[str, str], bodies: list[bytes],
             senders: int) -> float:
    """Seconds from the first request until every response has come back."""
    queue: mp.Queue = mp.Queue()
    shares = [bodies[i::senders] for i in range(senders)]
    procs = [mp.Process(target=sender, args=(url, content_type, headers, share, queue))
             for share in shares]
    for p in procs:
        p.start()
    for _ in procs:
        assert queue.get(timeout=120) == "ready"
    t0 = time.perf_counter()
    for _ in procs:
        if queue.get(timeout=1800) != "done":
            raise RuntimeError("a sender failed")
    elapsed = time.perf_counter() - t0
    for p in procs:
        p.join()
        if p.exitcode:
            raise RuntimeError("a sender failed")
    return elapsed


# ---- servers ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up in {seconds:.0f} s")


@contextmanager
def process(args: list[str], env: dict[str, str], log: Path) -> Iterator[None]:
    with log.open("wb") as out:
        proc = subprocess.Popen(args, env={**os.environ, **env}, stdout=out,
                                stderr=subprocess.STDOUT)
        try:
            yield
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@contextmanager
def bench(data_dir: Path) -> Iterator[tuple[str, dict[str, str]]]:
    raw, record = new_key("perf", now=SYSTEM_CLOCK.now())
    store = SqliteStore.open(data_dir / "bench.db")
    store.accounts.create_key(record)
    store.close()
    port = free_port()
    with process([sys.executable, "-m", "bench_core.cli", "serve", "--port", str(port),
                  "--data-dir", str(data_dir)],
                 {"POWERTOOLS_LOG_LEVEL": "WARNING", "BENCH_INGEST_KEY_RATE": "0"},  # one key
                 data_dir / "server.log"):
        url = f"http://127.0.0.1:{port}"
        wait_up(url, 60)
        yield url, {"X-Bench-Key": raw}


@contextmanager
def phoenix(exe: str, work_dir: Path) -> Iterator[str]:
    port = free_port()
    env = {"PHOENIX_WORKING_DIR": str(work_dir), "PHOENIX_PORT": str(port),
           "PHOENIX_HOST": "127.0.0.1", "PHOENIX_GRPC_PORT": str(free_port()),
           "PHOENIX_TELEMETRY_ENABLED": "false"}
    with process([exe, "serve"], env, work_dir / "server.log"):
        url = f"http://127.0.0.1:{port}"
        wait_up(url, 300)
        yield url


def phoenix_spans(work_dir: Path) -> int:
    with sqlite3.connect(f"file:{work_dir / 'phoenix.db'}?mode=ro", uri=True) as db:
        return int(db.execute("SELECT count(*) FROM spans").fetchone()[0])


# ---- the run ---------------------------------------------------------------------------------


@dataclass
class Rate:
    label: str
    spans: int
    answered_s: float
    stored_s: float

    def line(self) -> str:
        return (f"{self.label:<28} {self.spans / self.answered_s:>10,.0f} {self.spans / self.stored_s:>10,.0f}"
                f"   ({self.spans:,} spans, stored in {self.stored_s:.1f} s)")


def run_bench(label: str, bodies: list[bytes], content_type: str, senders: int) -> Rate:
    with tempfile.TemporaryDirectory() as tmp, bench(Path(tmp)) as (url, headers):
        send_all(url, content_type, headers, bodies[:2], senders=1)  # warm up
        elapsed = send_all(url, content_type, headers, bodies[2:], senders)
        return Rate(label, (len(bodies) - 2) * BATCH, elapsed, elapsed)


def run_phoenix(exe: str, bodies: list[bytes], senders: int) -> Rate:
    with tempfile.TemporaryDirectory() as tmp, phoenix(exe, Path(tmp)) as url:
        work_dir = Path(tmp)
        send_all(url, PROTOBUF, {}, bodies[:2], senders=1)
        warm = 2 * BATCH
        while phoenix_spans(work_dir) < warm:
            time.sleep(0.05)
        t0 = time.perf_counter()
        answered = send_all(url, PROTOBUF, {}, bodies[2:], senders)
        total = len(bodies) * BATCH
        deadline = time.monotonic() + 1800
        while phoenix_spans(work_dir) < total:
            if time.monotonic() > deadline:
                raise RuntimeError(f"Phoenix stored {phoenix_spans(work_dir)} of {total} spans")
            time.sleep(0.05)
        return Rate("Phoenix protobuf", total - warm, answered, time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=40, help="batches of 512 spans per server")
    parser.add_argument("--senders", type=int, default=4)
    parser.add_argument("--phoenix", default=shutil.which("phoenix"),
                        help="the `phoenix` executable of a virtualenv with arize-phoenix")
    args = parser.parse_args()
    rng = random.Random(7)
    protobuf = [export_request(rng) for _ in range(args.batches + 2)]
    json_bodies = [as_json(body) for body in protobuf]
    print(f"{args.batches} batches of {BATCH} spans, {args.senders} senders; "
          f"{len(protobuf[0]):,} bytes protobuf, {len(json_bodies[0]):,} bytes JSON per batch")
    print(f"{'':<28} {'answered':>10} {'stored':>10}   spans/s")
    rates = [run_bench("Bench protobuf", protobuf, PROTOBUF, args.senders),
             run_bench("Bench JSON", json_bodies, JSON, args.senders)]
    for rate in rates:
        print(rate.line(), flush=True)
    if not args.phoenix:
        print("Phoenix: skipped, no `phoenix` executable (see the module docstring)")
        return
    phoenix_rate = run_phoenix(args.phoenix, protobuf, args.senders)
    print(phoenix_rate.line())
    stored = phoenix_rate.spans / phoenix_rate.stored_s
    for rate in rates:
        print(f"{rate.label} / Phoenix (stored): {rate.spans / rate.stored_s / stored:.1f}x")


if __name__ == "__main__":
    main()
