"""What the live push costs an ingest answer on Lambda: the ingest function's invocation time,
in process over moto, with N watchers connected to the agent, for this tree and a baseline tree
side by side in one run.

    git worktree add --detach /tmp/bench-main 08caa55    # the code before, then:
    python tests/perf/live_push_latency.py --baseline /tmp/bench-main [--watchers 0,10,100]
        [--rounds 40] [--delay-ms 20]

Each tree runs in its own interpreter with its own `bench_core`, template and test harness
(`tests/aws`): IngestFunction's module loaded as Lambda loads it, the environment the tree's
template gives it (no eval state machine, so only the live feed differs), moto's DynamoDB, and
one `POST /ingest` of a task (start and end, as the SDK sends it) per round, timed from the
handler's call to its return: what API Gateway waits for. The other AWS calls the ingest makes
go over real HTTP to a loopback server (its own process) that answers each after `--delay-ms`,
as API Gateway's management API (PostToConnection) and Lambda's Invoke would: the baseline
posts to every watcher before it answers, this tree hands the batch to the push function with
one asynchronous invoke. The trees alternate round by round, so both see the same machine.
Not a test: the numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.request import urlopen

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
SLUG = "watched"


# ── the AWS stand-in: API Gateway's management API and Lambda's Invoke, each call delayed ───

def serve_aws(delay_s: float) -> None:
    """Answers every call after `delay_s`, on kept-alive connections as AWS's endpoints do;
    `GET /calls` says how many of each it answered."""
    calls = {"PostToConnection": 0, "DeleteConnection": 0, "Invoke": 0}

    class Answer(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self, status: int, call: str, body: bytes = b"") -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            if call:
                calls[call] += 1
                time.sleep(delay_s)
            self.send_response(status)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            invoke = "/functions/" in self.path
            self._answer(202 if invoke else 200, "Invoke" if invoke else "PostToConnection")

        def do_DELETE(self) -> None:  # noqa: N802
            self._answer(204, "DeleteConnection")

        def do_GET(self) -> None:  # noqa: N802
            self._answer(200, "", json.dumps(calls).encode())

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


# ── one tree's worker: reads "N" lines, answers each with one invocation time in ms ────────────

def work(aws_url: str) -> None:
    from bench_core.domain.keys import new_key
    from bench_core.domain.live import LiveConnection
    from bench_core.domain.models import Agent

    from tests.aws import cfn
    from tests.aws.lambda_runtime import DeployedHttpApi, stand_ins
    from tests.aws.moto_table import TABLE_NAME, dynamo_store
    from tests.factories import batch, task_events

    with dynamo_store() as store, passed_through(aws_url):
        transformed = cfn.transform()
        api = DeployedHttpApi(transformed, stand_ins(transformed, TABLE_NAME))
        environment = api.environments["IngestFunction"]
        environment.pop("BENCH_EVAL_QUEUE_URL", None)
        environment["BENCH_LIVE_ENDPOINT"] = f"{aws_url}/prod"
        os.environ["AWS_ENDPOINT_URL_LAMBDA"] = aws_url
        raw, record = new_key("perf")
        store.accounts.create_key(record)
        store.agents.create_agent(Agent(login="perf", slug=SLUG, created_at="2026-12-01T00:00:00Z"))
        connected = 0
        print(json.dumps({"ready": True, "bench_core": sys.modules["bench_core"].__file__}),
              flush=True)
        for n, line in enumerate(sys.stdin):
            watchers = int(line)
            for i in range(connected, watchers):  # connect more; a round only ever adds
                store.accounts.add_connection(LiveConnection(
                    f"conn-{i:04d}", "perf", SLUG, None, "2999-01-01T00:00:00.000Z"))
            connected = max(connected, watchers)
            assert connected == watchers, "ask for watcher counts in ascending order"
            body = batch(SLUG, task_events(f"t{n}"))
            started = time.perf_counter()
            reply = api.request("POST", "/ingest", headers={"X-Bench-Key": raw}, json_body=body)
            elapsed = (time.perf_counter() - started) * 1000
            assert reply.status == 200, reply.body
            print(json.dumps({"ms": elapsed}), flush=True)


@contextmanager
def passed_through(url: str) -> Iterator[None]:
    """Calls to the stand-in go straight to it, as calls to AWS would: moto would only try each
    of its services' URL patterns on them first (milliseconds a call, not AWS's)."""
    from moto.core.botocore_stubber import BotocoreStubber

    original = BotocoreStubber.process_request

    def process_request(self: Any, request: Any) -> Any:
        return None if request.url.startswith(url) else original(self, request)

    with mock.patch.object(BotocoreStubber, "process_request", process_request):
        yield


class Worker:
    def __init__(self, name: str, tree: Path, aws_url: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "POWERTOOLS_"))}
        env.update(PYTHONPATH=f"{tree / 'layers' / 'core'}{os.pathsep}{tree}",
                   AWS_DEFAULT_REGION="us-east-1", POWERTOOLS_LOG_LEVEL="WARNING",
                   POWERTOOLS_METRICS_DISABLED="true", POWERTOOLS_TRACE_DISABLED="true")
        self.name = name
        self.process = subprocess.Popen([sys.executable, str(HERE), "--worker", aws_url],
                                        cwd=tree, env=env, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        text=True)
        ready = self._read()
        assert Path(ready["bench_core"]).is_relative_to(tree), (name, ready)

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        while line := self.process.stdout.readline():
            if line.startswith("{"):
                answer: dict[str, Any] = json.loads(line)
                return answer
        raise RuntimeError(f"the {self.name} worker stopped")

    def ingest(self, watchers: int) -> float:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{watchers}\n")
        self.process.stdin.flush()
        return float(self._read()["ms"])

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, required=True,
                        help="the root of the tree to compare with (a git worktree of it)")
    parser.add_argument("--watchers", default="0,10,100")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--delay-ms", type=float, default=20.0,
                        help="how long the AWS stand-in takes to answer each call")
    args = parser.parse_args()
    counts = sorted(int(n) for n in args.watchers.split(","))
    trees = {"baseline": args.baseline.resolve(), "ours": REPO}
    stand_ins = {name: subprocess.Popen([sys.executable, str(HERE), "--serve-aws",
                                         str(args.delay_ms)], stdout=subprocess.PIPE, text=True)
                 for name in trees}
    try:
        urls = {name: f"http://127.0.0.1:{int(p.stdout.readline())}"  # type: ignore[union-attr]
                for name, p in stand_ins.items()}
        workers = {name: Worker(name, tree, urls[name]) for name, tree in trees.items()}
        try:
            results = []
            for watchers in counts:
                samples: dict[str, list[float]] = {name: [] for name in workers}
                for round_no in range(args.warmup + args.rounds):
                    for name, worker in workers.items():
                        ms = worker.ingest(watchers)
                        if round_no >= args.warmup:
                            samples[name].append(ms)
                row: dict[str, Any] = {"watchers": watchers}
                for name, values in samples.items():
                    calls = json.loads(urlopen(f"{urls[name]}/calls").read())  # noqa: S310
                    row[name] = {"p50_ms": round(percentile(values, 50), 1),
                                 "p95_ms": round(percentile(values, 95), 1),
                                 "mean_ms": round(statistics.fmean(values), 1),
                                 "aws_calls_so_far": calls}
                for q in ("p50_ms", "p95_ms"):
                    row[f"{q[:3]}_ratio"] = round(row["ours"][q] / row["baseline"][q], 2)
                results.append(row)
                print(f"{watchers:>4} watchers: baseline p50 {row['baseline']['p50_ms']} ms, "
                      f"p95 {row['baseline']['p95_ms']} ms | ours p50 {row['ours']['p50_ms']} "
                      f"ms, p95 {row['ours']['p95_ms']} ms | ours/baseline p50 "
                      f"{row['p50_ratio']}, p95 {row['p95_ratio']}", flush=True)
        finally:
            for worker in workers.values():
                worker.close()
    finally:
        for stand_in in stand_ins.values():
            stand_in.terminate()
            stand_in.wait(timeout=20)
    print(json.dumps({"rounds": args.rounds, "delay_ms": args.delay_ms, "cpus": os.cpu_count(),
                      "results": results}))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--serve-aws":
        serve_aws(float(sys.argv[2]) / 1000)
    elif len(sys.argv) == 3 and sys.argv[1] == "--worker":
        work(sys.argv[2])
    else:
        main()
