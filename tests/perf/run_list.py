"""The runs list's filters, search and sorts on SQLite at 1M stored events, in process (p50,
p99), and what the search index (`store/sqlite/run_list.py` `tasks_text`) costs ingest.

    python tests/perf/run_list.py [--events 1000000] [--repeats 100] [--ingest-events 100000]

What is timed is what the route does, minus HTTP: `reads.runs_page` (the filter parsed from the
query, the store's query, the privacy gate on each run) and the Jinja render of runs.html, as a
visitor and as the owner (whose search reads inputs and outputs). The agent is filled through
`SqliteStore.ingest`: runs of seven events, a root (start, end: metadata with an env and a
tag), a model call (start, an evidence record naming one of four models of two providers, end;
its output names one of 50 countries; priced as ingest prices it) and a tool call (start, end); a tenth failed, a third
scored. Then the store is closed and opened again, and each query timed after a warm-up.

The ingest side: the same batches into two fresh files side by side, one with the search index
(`store/sqlite/run_text.py`) and the sorts' indexes, one without them, their times compared
(`--ingest-events` each).

Not a test: the numbers depend on the machine. Goal: a filtered page under 50 ms.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core.domain.models import AgentMeta, AgentRef, EvalResult, iso  # noqa: E402
from bench_core.domain.privacy import ANONYMOUS, Viewer  # noqa: E402
from bench_core.http.templating import render  # noqa: E402
from bench_core.reads import runs as reads  # noqa: E402
from bench_core.store.sqlite.run_list import SORTED  # noqa: E402
from bench_core.store.sqlite.store import SqliteStore  # noqa: E402
from surfaces import timed  # noqa: E402

from tests.factories import clean  # noqa: E402

LOGIN = "perf"
SLUG = "lister"
EVENTS_PER_RUN = 7
BATCH_RUNS = 140
START = datetime(2026, 9, 1, tzinfo=UTC)
MODELS = (("gpt-4o-mini", "openai"), ("gpt-4o", "openai"), ("claude-3-5-haiku", "anthropic"),
          ("claude-3-5-sonnet", "anthropic"))
RARE_MODEL = "o3-pro"
"""Called by one run in 20,000."""
COUNTRIES = ("Portugal", "Spain", "France", "Italy", "Germany", "Austria", "Belgium", "Chile",
             "Norway", "Sweden", "Finland", "Poland", "Greece", "Turkey", "Egypt", "Kenya",
             "Ghana", "Peru", "Brazil", "Mexico", "Canada", "Japan", "China", "India", "Nepal",
             "Laos", "Vietnam", "Korea", "Mongolia", "Iran", "Iraq", "Israel", "Jordan",
             "Morocco", "Tunisia", "Algeria", "Libya", "Sudan", "Ethiopia", "Somalia", "Uganda",
             "Rwanda", "Zambia", "Angola", "Namibia", "Botswana", "Lesotho", "Malawi", "Mali",
             "Niger")
RARE_WORD = "quetzalcoatl"
"""In the output of one run in 10,000."""


def run_events(i: int, rng: random.Random) -> list[dict[str, Any]]:
    run_id = f"run-{i}"
    begin = START + timedelta(seconds=i * 20)
    failed = rng.random() < 0.1
    model, provider = (RARE_MODEL, "openai") if i % 20_000 == 7 else rng.choice(MODELS)
    country = rng.choice(COUNTRIES)
    words = f"the capital of {country}" + (f" and {RARE_WORD}" if i % 10_000 == 3 else "")
    tokens_in, tokens_out = rng.randint(50, 4000), rng.randint(10, 800)
    call_ms = rng.lognormvariate(6.5, 0.7)

    def at(ms: float) -> str:
        return iso(begin + timedelta(milliseconds=ms))

    bodies: list[tuple[str, str, str, str, dict[str, Any]]] = [
        ("rs", "task.start", run_id, at(0), {"name": "answer", "input": {"q": f"about {country}"}}),
        ("ls", "task.start", f"{run_id}-llm", at(1), {"name": "chat", "parent_task_id": run_id}),
        ("ll", "task.log", f"{run_id}-llm", at(2), {"data": {
            "label": "evidence", "provider": provider, "model": model,
            "input_tokens": tokens_in, "output_tokens": tokens_out}}),
        ("le", "task.end", f"{run_id}-llm", at(call_ms), {"status": "success", "output": words,
                                                         "duration_ms": call_ms}),
        ("ts", "task.start", f"{run_id}-tool", at(call_ms + 1), {
            "name": f"lookup {country}", "parent_task_id": run_id}),
        ("te", "task.end", f"{run_id}-tool", at(call_ms + 30), {"status": "success",
                                                               "output": {"found": 3},
                                                               "duration_ms": 29}),
        ("re", "task.end", run_id, at(call_ms + 40), {
            "status": "failed" if failed else "success", "output": words,
            "duration_ms": call_ms + 40,
            "data": {"env": rng.choice(("prod", "staging", "dev")),
                     "tags": [rng.choice(("beta", "eu", "us", "canary"))]}}),
    ]
    return [{"id": f"{task}-{suffix}", "kind": kind, "ts": ts, "task_id": task, **body}
            for suffix, kind, task, ts, body in bodies]


def fill(store: SqliteStore, runs: int, *, scores: bool = True) -> float:
    """The agent's runs ingested in batches; the seconds it took."""
    rng = random.Random(SLUG)
    ref = AgentRef(LOGIN, SLUG)
    started = time.perf_counter()
    for first in range(0, runs, BATCH_RUNS):
        ids = range(first, min(runs, first + BATCH_RUNS))
        store.ingest.ingest(LOGIN, AgentMeta(slug=SLUG),
                            clean([e for i in ids for e in run_events(i, rng)]))
        if scores:
            store.evals.record_evals(ref, {f"run-{i}": EvalResult(
                status="scored", judge="perf", at=iso(START), score=(i % 97) / 96)
                for i in ids if i % 3 == 0})
        if first % (BATCH_RUNS * 200) == 0:
            print(f"  {first * EVENTS_PER_RUN:,} events ({time.perf_counter() - started:.0f} s)",
                  flush=True)
    return time.perf_counter() - started


QUERIES: dict[str, dict[str, Any]] = {
    "newest 50 (no filter)": {},
    "status=failed": {"status": "failed"},
    "model=gpt-4o-mini": {"model": "gpt-4o-mini"},
    f"model={RARE_MODEL} (rare)": {"model": RARE_MODEL},
    "provider=anthropic": {"provider": "anthropic"},
    "tag=canary": {"tag": "canary"},
    "meta env=prod": {"meta": ["env=prod"]},
    "since/until (one day)": {"since": "2026-09-10", "until": "2026-09-10"},
    "cost 0.001..0.01": {"min_cost": "0.001", "max_cost": "0.01"},
    "tokens >= 4000": {"min_tokens": "4000"},
    "duration 500..2000 ms": {"min_ms": "500", "max_ms": "2000"},
    "score >= 0.9": {"min_score": "0.9"},
    "q=Portugal": {"q": "Portugal"},
    f"q={RARE_WORD} (rare)": {"q": RARE_WORD},
    "q=ug (short: no index)": {"q": "ug"},
    "sort=cost": {"sort": "cost"},
    "sort=duration asc": {"sort": "duration", "order": "asc"},
    "sort=score, failed": {"sort": "score", "status": "failed"},
    "failed, openai, q=Spain": {"status": "failed", "provider": "openai", "q": "Spain"},
    "meta+tag+tokens, sort=tokens": {"meta": ["env=dev"], "tag": "eu", "min_tokens": "1000",
                                     "sort": "tokens"},
}
"""Each timed query, by the name it is reported under: the page's query parameters."""


def draw(store: SqliteStore, viewer: Viewer, filters: dict[str, Any]) -> Callable[[], str]:
    ref = AgentRef(LOGIN, SLUG)

    def page() -> str:
        model = reads.runs_page(store, ref, viewer, filters, None)
        return render("runs.html", request=None, viewer=viewer, next_query=None,
                      base="https://bench.example", **model)
    return page


def lists(path: Path, repeats: int) -> None:
    store = SqliteStore.open(path)
    owner = Viewer(LOGIN)
    print(f"\n{'query':<34}{'runs':>6}{'visitor p50':>13}{'p99':>8}{'owner p50':>11}{'p99':>8}")
    try:
        for name, filters in QUERIES.items():
            shown = draw(store, owner, filters)().count('class="run-link"')
            visitor = timed(draw(store, ANONYMOUS, filters), repeats)
            owned = timed(draw(store, owner, filters), repeats)
            print(f"{name:<34}{shown:>6}{visitor[0]:>13.2f}{visitor[1]:>8.2f}{owned[0]:>11.2f}"
                  f"{owned[1]:>8.2f}", flush=True)
    finally:
        store.close()


VARIANTS = {"neither": (True, True), "sort indexes only": (True, False),
            "search index only": (False, True), "both (as shipped)": (False, False)}
"""What each ingest run drops: (the search index's writes, the sorts' indexes)."""


def ingest_cost(events: int) -> None:
    """The same batches into fresh files with and without the search index and the sorts'
    indexes, each variant in turn (so that none has the machine to itself), twice each."""
    runs = events // EVENTS_PER_RUN
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory() as tmp:
        for attempt in range(2):
            for name, (no_search, no_sorts) in VARIANTS.items():
                store = SqliteStore.open(Path(tmp) / f"{attempt}-{name}.db")
                with store.db.write() as conn:
                    if no_search:  # every new span counts as indexed: none is
                        conn.execute("UPDATE tasks_text_upto SET upto = 9223372036854775807")
                    for column in SORTED if no_sorts else ():
                        conn.execute(f"DROP INDEX tasks_roots_by_{column}")
                times[name].append(fill(store, runs, scores=False))
                store.close()
    print(f"\ningest of {runs * EVENTS_PER_RUN:,} events in batches of "
          f"{BATCH_RUNS * EVENTS_PER_RUN} (best of 2)")
    base = min(times["neither"])
    for name, seconds in times.items():
        best = min(seconds)
        print(f"  {name:<20}{best:8.2f} s{runs * EVENTS_PER_RUN / best:10,.0f} events/s"
              f"{100 * (best / base - 1):+8.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--ingest-events", type=int, default=100_000)
    parser.add_argument("--db", type=Path, help="keep the filled file here (reused if there)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or Path(tmp) / "bench.db"
        if not path.exists():
            store = SqliteStore.open(path)
            runs = args.events // EVENTS_PER_RUN
            print(f"SQLite: filling {runs:,} runs ({runs * EVENTS_PER_RUN:,} events)", flush=True)
            print(f"  filled in {fill(store, runs):.0f} s")
            store.close()
        lists(path, args.repeats)
    if args.ingest_events:
        ingest_cost(args.ingest_events)


if __name__ == "__main__":
    main()
