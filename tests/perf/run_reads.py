"""What one anonymous read of a big run costs a real server, and how /healthz answers while
many such readers run: memory and time, side by side for several source trees (this branch
and main, say).

    python tests/perf/run_reads.py [--spans 100000] [--readers 20] [--rounds 3]
                                   [--tree PATH ...]

For each tree (default: this one; another checkout, e.g. `git archive main | tar -x -C DIR`,
runs its own code: its `layers/core` goes first on the path) a subprocess fills a fresh SQLite
store with one run of `--spans` spans (`tests.http.runs_data.tree_run_events`, through the
store's ingest) and a 10-span run, then a fresh server process of that tree's app
(`create_local_app` on uvicorn, as `bench-server serve` runs it) serves it on a free loopback
port. Measured from outside, over HTTP, as an anonymous visitor:

- one read of the run's JSON (its first page) and of its page: the time to the whole answer
  and how far the server's resident memory peaked above what it held before (Linux `VmHWM`,
  reset through `/proc/PID/clear_refs` before each read), the larger of three reads;
- `--readers` threads reading the page and the JSON in turn (`--rounds` each) while /healthz
  is asked every 50 ms: its latency (p50, max), the readers' answers and latencies, and the
  server's peak memory above idle.

Not a test: the numbers depend on the machine (and on what else it runs).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
LOGIN, SLUG, RUN, SMALL = "perf", "big", "big-run", "small-run"


# ---- in the tree's own processes --------------------------------------------------------------


def fill(data_dir: str, spans: int) -> None:
    from bench_core.domain.models import AgentMeta
    from bench_core.store.sqlite.store import SqliteStore

    from tests.factories import clean
    from tests.http.runs_data import tree_run_events

    store = SqliteStore.open(Path(data_dir) / "bench.db")
    events = tree_run_events(RUN, spans) + tree_run_events(SMALL, 10)
    for i in range(0, len(events), 20_000):
        store.ingest.ingest(LOGIN, AgentMeta(slug=SLUG), clean(events[i:i + 20_000]))
    store.close()


def serve(data_dir: str) -> None:
    import socket

    import uvicorn
    from bench_core.local import create_local_app, server_config
    from bench_core.settings import Settings

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    app = create_local_app(Settings(data_dir=Path(data_dir)))
    uvicorn.Server(server_config(app, log_level="error")).run(sockets=[sock])


# ---- the measuring side -----------------------------------------------------------------------


def tree_env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{tree / 'layers' / 'core'}{os.pathsep}{REPO}",
            "PYTHONDONTWRITEBYTECODE": "1"}


@dataclass
class Server:
    url: str
    pid: int

    def memory_kb(self, name: str) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1])
        raise LookupError(name)

    def reset_peak(self) -> None:
        Path(f"/proc/{self.pid}/clear_refs").write_text("5")


@contextmanager
def running(tree: Path, data_dir: str) -> Iterator[Server]:
    process = subprocess.Popen([sys.executable, __file__, "--serve", data_dir],
                               env=tree_env(tree), stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        server = Server(f"http://127.0.0.1:{process.stdout.readline().strip()}", process.pid)
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(server.url + "/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.1)
        yield server
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextmanager
def warmed(tree: Path, data_dir: str) -> Iterator[Server]:
    """A fresh server that has answered the small run's JSON and page once (imports, the
    templates compiled, the store's connections open)."""
    with running(tree, data_dir) as server:
        for path in (f"/api/agents/{LOGIN}/{SLUG}/runs/{SMALL}", f"/u/{LOGIN}/{SLUG}/runs/{SMALL}"):
            assert httpx.get(server.url + path).status_code == 200
        yield server


PATHS = {"JSON": f"/api/agents/{LOGIN}/{SLUG}/runs/{RUN}", "page": f"/u/{LOGIN}/{SLUG}/runs/{RUN}"}


def one_read(server: Server, path: str) -> tuple[float, float, int]:
    """Seconds to the whole answer, MB the server's memory peaked above its level before, and
    the answer's size in bytes."""
    server.reset_peak()
    before = server.memory_kb("VmRSS")
    started = time.perf_counter()
    response = httpx.get(server.url + path, headers={"Accept": "text/html"}, timeout=120)
    took = time.perf_counter() - started
    assert response.status_code == 200, (path, response.status_code, response.text[:300])
    return took, (server.memory_kb("VmHWM") - before) / 1024, len(response.content)


@dataclass
class Burst:
    healthz_ms: list[float] = field(default_factory=list)
    read_ms: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    peak_mb: float = 0.0


def burst(server: Server, readers: int, rounds: int) -> Burst:
    out = Burst()
    idle = server.memory_kb("VmRSS")
    server.reset_peak()
    lock = threading.Lock()
    done = threading.Event()

    def reader(i: int) -> None:
        with httpx.Client(timeout=300) as client:
            for r in range(rounds):
                path = PATHS["page" if (i + r) % 2 else "JSON"]
                started = time.perf_counter()
                status = client.get(server.url + path).status_code
                with lock:
                    out.read_ms.append((time.perf_counter() - started) * 1000)
                    out.statuses[status] += 1

    def prober() -> None:
        with httpx.Client(timeout=300) as client:
            while not done.is_set():
                started = time.perf_counter()
                assert client.get(server.url + "/healthz").status_code == 200
                out.healthz_ms.append((time.perf_counter() - started) * 1000)
                time.sleep(0.05)

    probe = threading.Thread(target=prober)
    threads = [threading.Thread(target=reader, args=(i,)) for i in range(readers)]
    probe.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    probe.join()
    out.peak_mb = (server.memory_kb("VmHWM") - idle) / 1024
    return out


def measure(tree: Path, spans: int, readers: int, rounds: int) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as data_dir:
        print(f"{tree}: filling a {spans:,}-span run", flush=True)
        subprocess.run([sys.executable, __file__, "--fill", data_dir, "--spans", str(spans)],
                       env=tree_env(tree), check=True)
        row: dict[str, str] = {}
        for name, path in PATHS.items():  # each in a fresh server: freed memory stays mapped
            reads = []
            for _ in range(3):
                with warmed(tree, data_dir) as server:
                    row["server at rest (MB)"] = f"{server.memory_kb('VmRSS') / 1024:.0f}"
                    reads.append(one_read(server, path))
            row[f"one {name} read: s"] = f"{statistics.median(r[0] for r in reads):.3f}"
            row[f"one {name} read: peak MB"] = f"{max(r[1] for r in reads):.1f}"
            row[f"one {name} read: KB sent"] = f"{reads[0][2] / 1024:.0f}"
        print(f"  {readers} readers", flush=True)
        with warmed(tree, data_dir) as server:
            b = burst(server, readers, rounds)
        row |= {f"{readers} readers: healthz p50 ms": f"{statistics.median(b.healthz_ms):.0f}",
                f"{readers} readers: healthz max ms": f"{max(b.healthz_ms):.0f}",
                f"{readers} readers: healthz answered": str(len(b.healthz_ms)),
                f"{readers} readers: read p50 ms": f"{statistics.median(b.read_ms):.0f}",
                f"{readers} readers: read max ms": f"{max(b.read_ms):.0f}",
                f"{readers} readers: answers": " ".join(
                    f"{n}x{status}" for status, n in sorted(b.statuses.items())),
                f"{readers} readers: peak MB above idle": f"{b.peak_mb:.0f}"}
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=100_000)
    parser.add_argument("--readers", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tree", type=Path, action="append")
    parser.add_argument("--fill", help=argparse.SUPPRESS)
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fill:
        return fill(args.fill, args.spans)
    if args.serve:
        return serve(args.serve)
    trees = [t.resolve() for t in args.tree or [REPO]]
    columns = {str(tree): measure(tree, args.spans, args.readers, args.rounds) for tree in trees}
    print(f"\n{args.spans:,}-span run, anonymous reads over HTTP")
    width = max(len(str(t)) for t in trees) + 2
    print(f"{'':<40}" + "".join(f"{str(t):>{width}}" for t in trees))
    for name in next(iter(columns.values())):
        print(f"{name:<40}" + "".join(f"{columns[str(t)][name]:>{width}}" for t in trees))


if __name__ == "__main__":
    main()
