"""Reading a run of 100,000 spans over real HTTP, anonymously: what one read holds in memory is
a page's worth, not the run's (the same for a run ten times smaller), and while twenty
visitors read it at once, /healthz still answers; reads beyond the server's turns wait, then
get 503 with Retry-After. Figures (memory and time, before and after): tests/perf/run_reads.py.
"""

from __future__ import annotations

import re
import statistics
import threading
import time
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from bench_core.domain.models import AgentMeta

from tests.conftest import RunningServer, serving
from tests.factories import clean
from tests.http.runs_data import ERROR, tree_run_events
from tests.http.test_ingest_http import new_login

MB = 1024 * 1024


@dataclass
class BigRuns:
    server: RunningServer
    data_dir: Path
    login: str

    def page(self, run: str) -> str:
        return f"{self.server.url}/u/{self.login}/big/runs/{run}"

    def json(self, run: str) -> str:
        return f"{self.server.url}/api/agents/{self.login}/big/runs/{run}"


def store_run(server: RunningServer, login: str, run_id: str, spans: int) -> None:
    """Through the store's own ingest, in big batches: seconds for 100,000 spans."""
    events = tree_run_events(run_id, spans)
    for i in range(0, len(events), 20_000):
        server.store.ingest.ingest(login, AgentMeta(slug="big"), clean(events[i:i + 20_000]))


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BigRuns]:
    data_dir = tmp_path_factory.mktemp("big-runs")
    with serving(data_dir, heavy_read_wait_s=300.0) as server:  # however slow the machine
        login = new_login()
        for run_id, spans in (("small", 10), ("ten-k", 10_000), ("hundred-k", 100_000)):
            store_run(server, login, run_id, spans)
        runs = BigRuns(server, data_dir, login)
        for url in (runs.page("small"), runs.json("small")):  # imports, templates compiled
            assert httpx.get(url).status_code == 200
        yield runs


def peak_mb(url: str) -> float:
    """How far the memory Python holds rose above where it was while one anonymous GET of
    `url` was answered: every thread's (the server's, in this process), so the least of three
    reads, as other threads (an earlier test's judge) may allocate meanwhile."""
    peaks = []
    for _ in range(3):
        tracemalloc.start()
        try:
            before, _ = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            response = httpx.get(url, headers={"Accept": "text/html"}, timeout=120)
            assert response.status_code == 200, response.text[:500]
            peaks.append((tracemalloc.get_traced_memory()[1] - before) / MB)
        finally:
            tracemalloc.stop()
    return min(peaks)


def test_a_read_of_a_run_holds_a_page_not_the_run(big: BigRuns) -> None:
    """Some 2 MB either way (main's JSON: 21 MB for 10,000 spans, 215 MB for 100,000)."""
    for url in (big.json, big.page):
        ten_k, hundred_k = peak_mb(url("ten-k")), peak_mb(url("hundred-k"))
        assert hundred_k < 2 * ten_k + 2, (url, ten_k, hundred_k)
        assert hundred_k < 25, (url, hundred_k)
    answer = httpx.get(big.json("hundred-k")).json()
    assert (answer["span_count"], answer["failed_spans"], len(answer["spans"])) == (
        100_000, 99, 1000)
    assert answer["next_cursor"] and answer["spans"][0]["task_id"] == "hundred-k"
    page = httpx.get(big.page("hundred-k")).text
    assert ("This run has 99,999 spans below its root, more than one read takes: the tree "
            "here is drawn from 1,000 of them by start time") in page
    assert "<b>spans</b> 100,000<" in page and "99 failed" in page
    assert re.search(r'class="span-row d\d+ failed selected" data-span="hundred-k-1000"', page)


def test_the_first_failure_of_a_big_run_is_one_click_from_its_header(big: BigRuns) -> None:
    page = httpx.get(big.page("hundred-k")).text
    link = re.search(r'href="([^"]+)" data-first-failed>', page)
    assert link is not None and link.group(1) == "?span=hundred-k-1000#span-hundred-k-1000"
    chosen = httpx.get(big.page("hundred-k"), params={"span": "hundred-k-1000"}).text
    detail = chosen[chosen.index('class="span-detail"'):]
    assert "status-failed" in detail and "hundred-k-1000" in detail
    assert ERROR not in detail  # a new agent's outputs are hidden from visitors


def test_a_span_deep_in_a_big_run_opens_with_its_subtree_and_ancestry(big: BigRuns) -> None:
    """Span 49,890 (under 48,890, under 44,445, under the root) starts half the run after the
    first page: focused, the page reads on from its start and draws its 111-span subtree, the
    failed span 50,000 in it, below breadcrumbs that lead back up."""
    page = httpx.get(big.page("hundred-k"), params={"focus": "hundred-k-49890"}).text
    assert "Showing the spans under" in page
    trail = page[page.index('class="focus-trail"'):page.index("whole run")]
    assert "focus=hundred-k-44445" in trail and "focus=hundred-k-48890" in trail
    drawn = re.findall(r'data-span="hundred-k-(\d+)" data-status="([a-z]+)"', page)
    assert [int(n) for n, _ in drawn] == list(range(49_890, 50_001))
    assert dict(drawn)["50000"] == "failed"


def test_healthz_answers_while_twenty_visitors_read_the_big_run(big: BigRuns) -> None:
    statuses: list[int] = []
    healthz: list[tuple[float, bool]] = []  # (seconds, readers still reading when answered)
    started = threading.Barrier(21)

    def reader(i: int) -> None:
        with httpx.Client(timeout=120) as client:
            started.wait()
            url = big.page("hundred-k") if i % 2 else big.json("hundred-k")
            statuses.append(client.get(url).status_code)
            statuses.append(client.get(url).status_code)

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    started.wait()
    with httpx.Client(timeout=120) as client:
        reading = True
        while reading:
            t0 = time.perf_counter()
            assert client.get(big.server.url + "/healthz").status_code == 200
            reading = any(t.is_alive() for t in threads)
            healthz.append((time.perf_counter() - t0, reading))
            time.sleep(0.05)
    for t in threads:
        t.join()
    assert statuses == [200] * 40
    during = [seconds for seconds, reading in healthz if reading]
    assert during, "no /healthz answer came while the readers read"
    print(f"\n/healthz with 20 readers of 100,000 spans: {len(during)} answers, "
          f"p50 {statistics.median(during) * 1000:.0f} ms, max {max(during) * 1000:.0f} ms")


def test_reads_beyond_the_servers_turns_get_503_with_retry_after(big: BigRuns) -> None:
    """One turn and no waiting: of twelve readers at once, those that find the turn taken are
    told to come back; cheap routes are not limited."""
    with serving(big.data_dir, heavy_reads=1, heavy_read_wait_s=0.0) as server:
        url = f"{server.url}/api/agents/{big.login}/big/runs/hundred-k"
        answers: list[httpx.Response] = []
        barrier = threading.Barrier(12)

        def read() -> None:
            barrier.wait()
            answers.append(httpx.get(url, timeout=120))

        threads = [threading.Thread(target=read) for _ in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        refused = [a for a in answers if a.status_code == 503]
        assert refused and len(refused) < 12
        assert {a.status_code for a in answers} == {200, 503}
        for answer in refused:
            assert answer.headers["retry-after"] == "1"
            assert answer.json()["error"].startswith("the server is busy")
        assert httpx.get(f"{server.url}/healthz").status_code == 200
