"""`make demo`: the two example agents send their runs to the Bench that `make run` serves with
the same PORT and HOST, and the demo reads them back from its API before pointing at the
profiles. When no Bench answers there, or its runs did not arrive, it says so and exits 1 (no
Bench: at once, before any agent runs).

    python scripts/demo.py [--host 127.0.0.1] [--port 8000] [--runs 20]

The key is made with `bench-server keys create` in the local data directory (BENCH_DATA_DIR,
else ./.bench), the one `make run` serves from.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import NoReturn

import httpx

REPO = Path(__file__).resolve().parents[1]
LOGIN = "demo"
AGENTS = {"research-agent": REPO / "examples" / "research_agent.py",
          "tool-agent": REPO / "examples" / "tool_agent.py"}
ARRIVAL_S = 10.0
"""How long runs the agents reported delivered may take to show in the API."""


def endpoint(host: str, port: int) -> str:
    """Where a client on this machine reaches a server listening on `host`:`port`."""
    if host in ("", "0.0.0.0", "::"):  # every address (or the default): this machine's loopback
        host = "127.0.0.1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def fail(message: str) -> NoReturn:
    print(f"make demo: {message}", file=sys.stderr)
    sys.exit(1)


def require_server(url: str) -> None:
    try:
        httpx.get(f"{url}/healthz", timeout=3).raise_for_status()
    except httpx.HTTPError as exc:
        fail(f"no Bench answers at {url} ({exc}). Start it in another terminal with `make run`, "
             "and give `make demo` the same PORT and HOST (e.g. `make run PORT=8001` and "
             "`make demo PORT=8001`).")


def create_key() -> str:
    server = Path(sys.executable).with_name("bench-server")
    done = subprocess.run([str(server), "keys", "create", "--login", LOGIN, "--name", "demo"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"could not create a key: {done.stderr.strip()}")
    return done.stdout.strip()


def runs(url: str, key: str, slug: str) -> int:
    """The runs the agent's profile counts (0 before its first)."""
    try:
        answer = httpx.get(f"{url}/api/agents/{LOGIN}/{slug}", headers={"X-Bench-Key": key},
                           timeout=10)
    except httpx.HTTPError as exc:
        fail(f"lost the Bench at {url} ({exc})")
    if answer.status_code == 404:
        return 0
    if answer.status_code == 401:
        data_dir = os.environ.get("BENCH_DATA_DIR", ".bench")
        fail(f"the Bench at {url} does not know the key just made in {data_dir}: it keeps its "
             "data elsewhere. Start it with the same BENCH_DATA_DIR as `make demo`.")
    if answer.status_code != 200:
        fail(f"the Bench at {url} answered {answer.status_code} for {LOGIN}/{slug}: "
             f"{answer.text[:200]}")
    return int(answer.json()["runs"])


def run_agent(url: str, key: str, slug: str, count: int) -> None:
    """One example agent's runs, sent and then read back."""
    before = runs(url, key, slug)
    done = subprocess.run([sys.executable, str(AGENTS[slug]), "--runs", str(count)],
                          env={**os.environ, "BENCH_KEY": key, "BENCH_ENDPOINT": url})
    if done.returncode != 0:
        fail(f"{AGENTS[slug].name} could not deliver its runs to {url} (exit {done.returncode})")
    deadline = time.monotonic() + ARRIVAL_S
    while (arrived := runs(url, key, slug) - before) < count and time.monotonic() < deadline:
        time.sleep(0.2)
    if arrived < count:
        fail(f"{arrived} of the {count} runs of {slug} arrived at {url}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    url = endpoint(args.host, args.port)
    require_server(url)
    key = create_key()
    for slug in AGENTS:
        run_agent(url, key, slug, args.runs)
    print("open " + " and ".join(f"{url}/u/{LOGIN}/{slug}" for slug in AGENTS))


if __name__ == "__main__":
    main()
