"""Public surfaces: badge and profile render time in process (p50, p99), for an agent with 1M
stored events and for one with 10, on SQLite. The two should take the same time: both read
counters, one day-series and the newest ten runs, and never scan history.

    python tests/perf/surfaces.py [--events 1000000] [--repeats 2000]

What is timed is what the routes do, minus HTTP: the badge is the store read, the privacy gate,
`views.agent_summary`, the SVG and its ETag (`bench_core.lambdas.badge`'s work); the profile is
`views.profile` (the agent, 30 days, ten runs), both charts and the Jinja render of
profile.html. The big agent is filled through `SqliteStore.ingest` in batches of 999 events
(333 runs of start, log, end), which takes a minute or two per million events.

Not a test: the numbers depend on the machine. Goals: badge p50 under 1 ms, profile p50 under
20 ms, and no growth with history.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench_core.domain.models import AgentMeta, AgentRef, CleanEvent, iso
from bench_core.domain.privacy import ANONYMOUS
from bench_core.http.analytics_section import analytics_context
from bench_core.http.pages import profile_context
from bench_core.http.templating import render
from bench_core.reads.agents import profile_page, public_summary
from bench_core.render.badge import badge_reply
from bench_core.store.sqlite.store import SqliteStore

LOGIN = "perf"
BATCH_RUNS = 333
START = datetime(2026, 9, 1, tzinfo=UTC)


def run_events(prefix: str, i: int, rng: random.Random) -> list[CleanEvent]:
    """One run as ingest stores it: start, a log line, end (a tenth of them failed)."""
    task_id = f"{prefix}-{i}"
    begin = START + timedelta(seconds=i * 7)
    duration = rng.lognormvariate(6.5, 0.7)
    end = begin + timedelta(milliseconds=duration)
    status = "failed" if rng.random() < 0.1 else "success"
    bodies = [
        ("s", "task.start", begin, {"name": "search", "input": {"query": f"question {i}"}}),
        ("l", "task.log", begin, {"name": "search", "data": {"label": "found", "value": 3}}),
        ("e", "task.end", end, {"name": "search", "status": status, "duration_ms": duration,
                                "output": "a short answer" if status == "success" else "timeout",
                                "cost_usd": 0.002}),
    ]
    events = []
    for suffix, kind, when, body in bodies:
        event_id = f"{task_id}-{suffix}"
        events.append(CleanEvent(id=event_id, kind=kind, ts=iso(when), task_id=task_id,
                                 body={"id": event_id, "kind": kind, "ts": iso(when),
                                       "task_id": task_id, **body}))
    return events


def fill(store: SqliteStore, slug: str, events: int) -> None:
    rng = random.Random(slug)
    runs = -(-events // 3)
    done = 0
    started = time.perf_counter()
    while done < runs:
        count = min(BATCH_RUNS, runs - done)
        batch = [e for i in range(done, done + count) for e in run_events(slug, i, rng)]
        store.ingest.ingest(LOGIN, AgentMeta(slug=slug, display_name=f"Agent {slug}"), batch)
        done += count
        if done % (BATCH_RUNS * 300) < BATCH_RUNS:
            print(f"  {slug}: {done * 3:,} events ({time.perf_counter() - started:.0f} s)",
                  flush=True)


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """p50 and p99 in milliseconds, after a warm-up."""
    for _ in range(min(50, repeats)):
        fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.99))]


def measure(store: SqliteStore, slug: str, repeats: int) -> dict[str, tuple[float, float]]:
    ref = AgentRef(LOGIN, slug)

    def badge() -> bytes:
        return badge_reply(public_summary(store, ref), "success", "flat").body

    def profile() -> str:
        agent = store.agents.get_agent(ref)
        assert agent is not None
        return render("profile.html", request=None, viewer=ANONYMOUS,
                      analytics=analytics_context(store, agent.ref, ANONYMOUS, {},
                                                  f"/u/{agent.login}/{agent.slug}"),
                      **profile_context(profile_page(store, agent, ANONYMOUS), "https://bench.example"))

    assert b"success" in badge() and "Recent runs" in profile()
    return {"badge": timed(badge, repeats), "profile": timed(profile, max(100, repeats // 10))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore.open(Path(tmp) / "bench.db")
        sizes = {"small": 10, "big": args.events}
        for slug, events in sizes.items():
            print(f"filling {slug} with {events:,} events", flush=True)
            fill(store, slug, events)
        stored = store.db.reader().execute("SELECT sum(n) FROM events").fetchone()[0]
        print(f"stored events: {stored:,}\n")
        print(f"{'agent':<40}{'surface':<10}{'p50 ms':>9}{'p99 ms':>9}")
        for slug in sizes:
            agent = store.agents.get_agent(AgentRef(LOGIN, slug))
            events = store.db.reader().execute(
                "SELECT sum(n) FROM events JOIN agents ON agents.id = events.agent_id "
                "WHERE slug = ?", (slug,)).fetchone()[0]
            label = f"{slug} ({events:,} events, {agent.stats.runs:,} runs)"
            for surface, (p50, p99) in measure(store, slug, args.repeats).items():
                print(f"{label:<40}{surface:<10}{p50:>9.3f}{p99:>9.3f}", flush=True)
        store.close()


if __name__ == "__main__":
    main()
