"""The run explorer in process, side by side with the profile page: the JSON of a 1,000-span
run, its page, and the runs list of an agent with 1M stored events, on SQLite and on DynamoDB.

    python tests/perf/runs.py [--events 1000000] [--dynamo-events 3000] [--repeats 200]
                              [--moto-repeats 10] [--only sqlite|dynamodb]

What is timed is what the routes do, minus HTTP: the JSON is `http.runs.run_json_body` (the
read and its encoding, the collector held off as the route holds it: `runtime.collector`), as
a visitor sees it (content hidden, as a new agent's is) and as its owner does;
the page is `reads.runs.run_page` and the Jinja render of run.html (the root's tree drawn, a
span selected), the collector held off likewise; the list is `reads.runs.runs_page` and
runs.html (newest 50, no filter) and the same filtered by status; the profile is what
tests/perf/surfaces.py times.
The 1,000-span run is a root with 10 children of 10 children of 9 or so each, every span
with a log line and every leaf with an evidence record. The last table puts every store's
figures side by side.

DynamoDB is measured two ways, both in process on moto's emulation of the deployed table:

- "on moto": the reads as they run against moto. Nearly all of that time is moto's own
  (its request handling and serialiser), so it says little about our code.
- "replayed": our side alone. Each surface runs once against moto while `replay.Tape`
  records the raw HTTP answer (status, headers, body) to every request, keyed by operation
  and request body; then a fresh boto3 client answers the same requests from the tape
  through botocore's `before-send` hook. The timing covers botocore's request serialisation,
  signing and response parsing, our item decoding, the tree, the privacy gate and the
  rendering, but not the emulator, the network or DynamoDB's own latency (add a few ms per
  request, and per 1 MB page of a Query, for the real service).

moto holds everything in memory, and far more than the items (3,000 events and the
1,000-span run take some 7 GB, 30,000 more than this machine's 24), so its agent is filled
with fewer events (`--dynamo-events`): every read here is a key-range Query or reads by key,
whose cost does not depend on how much history the agent has.

SQLite's reads and the replayed DynamoDB reads are timed in a fresh interpreter once the
data is in place, as a function that only serves reads starts (on AWS the web and API
functions never ingest). Timed in the process that filled the store, every read is some 15%
slower: a million ingested events (or moto's gigabytes, come and gone) leave the allocator's
memory scattered, and a run's thirty thousand new objects land all over it (measured here by
scattering a fresh process's memory the same way: 19.4 -> 22.1 ms for the run JSON).

Not a test: the numbers depend on the machine. Goals: JSON under 20 ms, page under 50 ms,
runs list under 20 ms at 1M events.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
import uuid
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench_core.domain.models import AgentMeta, AgentRef, CleanEvent  # noqa: E402
from bench_core.domain.privacy import ANONYMOUS, HIDDEN, Viewer  # noqa: E402
from bench_core.http.analytics_section import analytics_context  # noqa: E402
from bench_core.http.pages import profile_context  # noqa: E402
from bench_core.http.runs import run_json_body  # noqa: E402
from bench_core.http.templating import render  # noqa: E402
from bench_core.ports.store import Store
from bench_core.reads import runs as reads  # noqa: E402
from bench_core.reads.agents import profile_page  # noqa: E402
from bench_core.runtime import collector  # noqa: E402
from bench_core.runtime.adapters import Services  # noqa: E402
from bench_core.settings import Settings  # noqa: E402
from bench_core.store.dynamodb.store import DynamoStore  # noqa: E402
from bench_core.store.sqlite.store import SqliteStore  # noqa: E402
from replay import Tape  # noqa: E402
from surfaces import LOGIN, fill, timed  # noqa: E402

from tests.factories import clean, ts  # noqa: E402

RUN_SLUG = "tree"
FANOUT = (10, 10, 9)
Surfaces = dict[str, Callable[[], Any]]
Results = dict[str, tuple[float, float]]


def span_events(task_id: str, parent: str | None, name: str, at: int, leaf: bool
                ) -> list[dict[str, object]]:
    def event(kind: str, when: int, **fields: object) -> dict[str, object]:
        return {"id": uuid.uuid4().hex, "kind": kind, "ts": ts(when), "task_id": task_id,
                "parent_task_id": parent, "name": name, **fields}

    events = [event("task.start", at, input={"step": name}),
              event("task.log", at + 1, data={"label": "note", "value": f"working on {name}"})]
    if leaf:
        events.append(event("task.log", at + 2, data={
            "label": "evidence", "provider": "openai", "model": "gpt-4o-mini",
            "input_tokens": 300, "output_tokens": 80}))
    events.append(event("task.end", at + 40, status="failed" if name.endswith("7.7") else
                        "success", output=f"result of {name}", duration_ms=40))
    return events


def thousand_span_run(run_id: str) -> list[CleanEvent]:
    events = span_events(run_id, None, "run", 0, False)
    count = 1
    for a in range(FANOUT[0]):
        first = f"{run_id}-{a}"
        events += span_events(first, run_id, f"step {a}", 10 + a, False)
        count += 1
        for b in range(FANOUT[1]):
            second = f"{first}-{b}"
            events += span_events(second, first, f"step {a}.{b}", 20 + a * 10 + b, False)
            count += 1
            for c in range(max(0, min(FANOUT[2], 1000 - count - (FANOUT[1] - 1 - b)
                                      - (FANOUT[0] - 1 - a) * (FANOUT[1] + 1)))):
                events += span_events(f"{second}-{c}", second, f"step {a}.{b}.{c}",
                                      200 + count, True)
                count += 1
    return clean(events)


def ingest_run(store: Store, run_id: str) -> None:
    events = thousand_span_run(run_id)
    for i in range(0, len(events), 400):
        store.ingest.ingest(LOGIN, AgentMeta(slug=RUN_SLUG), events[i:i + 400])


def surface_calls(store: Store, list_slug: str, run_id: str) -> Surfaces:
    """What each surface does for one request, minus HTTP, by the name it is reported under."""
    tree, agents = AgentRef(LOGIN, RUN_SLUG), AgentRef(LOGIN, list_slug)
    selected = f"{run_id}-1-3-3"
    services = Services(Settings(), store)

    def run_json(viewer: Viewer = ANONYMOUS) -> Callable[[], bytes]:
        return lambda: run_json_body(services, tree, viewer, run_id, None)

    def run_page() -> str:
        with collector.paused():  # as the route holds it off
            return draw_run_page()

    def draw_run_page() -> str:
        model = reads.run_page(store, tree, ANONYMOUS, run_id, span=selected)
        assert isinstance(model, dict)
        return render("run.html", request=None, viewer=ANONYMOUS, base="https://bench.example",
                      href=lambda **_: "?", keep="", view_params={"span": selected}, **model)

    def runs_list(status: str | None = None) -> Callable[[], str]:
        def draw() -> str:
            filters = {"status": status} if status else {}
            model = reads.runs_page(store, agents, ANONYMOUS, filters, None)
            return render("runs.html", request=None, viewer=ANONYMOUS, next_query=None,
                          base="https://bench.example", **model)
        return draw

    def profile() -> str:
        agent = store.agents.get_agent(agents)
        assert agent is not None
        return render("profile.html", request=None, viewer=ANONYMOUS,
                      analytics=analytics_context(store, agent.ref, ANONYMOUS, {},
                                                  f"/u/{agent.login}/{agent.slug}"),
                      **profile_context(profile_page(store, agent, ANONYMOUS),
                                        "https://bench.example"))

    return {"run JSON (1,000 spans)": run_json(), "run JSON, its owner": run_json(Viewer(LOGIN)),
            "run page (1,000 spans)": run_page,
            "runs list": runs_list(), "runs list, failed only": runs_list("failed"),
            "profile page": profile}


def check(draws: Surfaces) -> None:
    """Each surface once, drawing what it should (which also records what it reads)."""
    answer = json.loads(draws["run JSON (1,000 spans)"]())
    assert answer["span_count"] == 1000 and len(answer["spans"]) == 1000, answer["span_count"]
    assert answer["spans"][5]["input"] == HIDDEN
    owned = json.loads(draws["run JSON, its owner"]())
    assert len(owned["spans"]) == 1000 and owned["spans"][5]["input"] != HIDDEN
    page = draws["run page (1,000 spans)"]()
    assert "TimeoutError" not in page and "span-detail" in page
    assert draws["runs list"]().count('class="run-link"') == 50
    assert "run-link" in draws["runs list, failed only"]()
    assert "<html" in draws["profile page"]()


def measure(draws: Surfaces, repeats: int) -> Results:
    return {name: timed(draw, repeats) for name, draw in draws.items()}


def report(name: str, events: int, results: Results) -> None:
    print(f"\n{name}: runs list and profile at {events:,} stored events")
    print(f"{'surface':<28}{'p50 ms':>9}{'p99 ms':>9}")
    for surface, (p50, p99) in results.items():
        print(f"{surface:<28}{p50:>9.2f}{p99:>9.2f}", flush=True)


def side_by_side(columns: dict[str, Results]) -> None:
    """Every store's figures in one table, p50 / p99 in ms."""
    print("\nside by side (p50 / p99 ms)")
    print(f"{'surface':<28}" + "".join(f"{name:>24}" for name in columns))
    for surface in next(iter(columns.values())):
        cells = (f"{r[surface][0]:.2f} / {r[surface][1]:.2f}" for r in columns.values())
        print(f"{surface:<28}" + "".join(f"{c:>24}" for c in cells))


def in_fresh_process(reads: Callable[..., Results], *args: Any) -> Results:
    """`reads(*args)` in a new interpreter, as a function that only serves reads starts (see
    the module docstring)."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(reads, *args).result()


def sqlite_reads(path: str, run_id: str, repeats: int) -> Results:
    store = SqliteStore.open(Path(path))
    try:
        draws = surface_calls(store, "big", run_id)
        check(draws)
        return measure(draws, repeats)
    finally:
        store.close()


def replayed_reads(table: str, tape: Tape, run_id: str, repeats: int) -> Results:
    draws = surface_calls(DynamoStore.open(table, client=tape.client()), "big", run_id)
    check(draws)
    return measure(draws, repeats)


def sqlite(events: int, run_id: str, repeats: int) -> Results:
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore.open(Path(tmp) / "bench.db")
        print(f"SQLite: filling 'big' with {events:,} events", flush=True)
        fill(store, "big", events)
        ingest_run(store, run_id)
        store.close()
        results = in_fresh_process(sqlite_reads, str(Path(tmp) / "bench.db"), run_id, repeats)
    report("SQLite", events, results)
    return results


def dynamodb(events: int, run_id: str, repeats: int, moto_repeats: int
             ) -> tuple[Results, Results]:
    """The replayed figures (our side) and moto's (emulator included)."""
    from tests.aws.moto_table import TABLE_NAME, dynamo_store

    tape = Tape()
    with dynamo_store() as store:
        print(f"DynamoDB (moto): filling 'big' with {events:,} events", flush=True)
        fill(store, "big", events)  # type: ignore[arg-type]
        ingest_run(store, run_id)
        draws = surface_calls(store, "big", run_id)
        with tape.recording(store.table.client):
            check(draws)
        moto = measure(draws, moto_repeats)
    report("DynamoDB (moto, in process: mostly the emulator)", events, moto)
    results = in_fresh_process(replayed_reads, TABLE_NAME, tape, run_id, repeats)
    report("DynamoDB (moto's answers replayed through botocore: our side)", events, results)
    return results, moto


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--dynamo-events", type=int, default=3_000)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--moto-repeats", type=int, default=10)
    parser.add_argument("--only", choices=("sqlite", "dynamodb"))
    args = parser.parse_args()
    run_id = "run-" + uuid.uuid4().hex[:8]
    columns: dict[str, Results] = {}
    if args.only != "dynamodb":
        columns["SQLite"] = sqlite(args.events, run_id, args.repeats)
    if args.only != "sqlite":
        replayed, moto = dynamodb(args.dynamo_events, run_id, args.repeats, args.moto_repeats)
        columns |= {"DynamoDB replayed": replayed, "DynamoDB on moto": moto}
    side_by_side(columns)


if __name__ == "__main__":
    main()
