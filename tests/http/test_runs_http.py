"""The run explorer over real HTTP: the run page (tree, waterfall, span details without
JavaScript), its JSON twin, the runs list, and the privacy gate on every field of both."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest

from tests.conftest import RunningServer
from tests.factories import batch, task_events
from tests.http.runs_data import (
    ERROR,
    SeededRun,
    seed_research_run,
    tree_run_events,
    wide_and_deep_events,
)
from tests.http.surfaces_data import fetch, set_agent, wait_until_judged
from tests.http.test_ingest_http import new_login, post

SECRETS = ("secret-question", "secret-plan", "secret-final", "secret-answer",
           "secret-log-value", ERROR, "span_meta")


@pytest.fixture(scope="module")
def seeded(bench_server: RunningServer) -> SeededRun:
    return seed_research_run(bench_server)


def run_json(server: RunningServer, run: SeededRun, task_id: str | None = None,
             key: str | None = None, **params: str) -> httpx.Response:
    headers = {"X-Bench-Key": key} if key else {}
    return httpx.get(f"{server.url}/api/agents/{run.path}/runs/{task_id or run.run_id}",
                     headers=headers, params=params, timeout=30)


def rows(html: str) -> list[tuple[str, str, str]]:
    """(span id, depth class, status) of every drawn span row, in page order."""
    return re.findall(r'<li id="span-([^"]+)" class="span-row (d\d+)[^"]*" data-span="[^"]+" '
                      r'data-status="([a-z]+)"', html)


WAYS_ON = re.compile(r'<a href="([^"]+)"(?: data-more="[^"]*")?(?: data-rest)? data-rows=|'
                     r'<a href="([^"]+)" data-next-window>')


def reached(server: RunningServer, start: str, most: int = 200) -> set[str]:
    """Every span drawn on the page at `start` or on a page its collapsed rows and windows
    lead to (their links without JavaScript), following at most `most` links."""
    seen: set[str] = set()
    todo, visited = [start], {start}
    while todo:
        assert len(visited) <= most, "too many pages to reach every span"
        html = fetch(server, todo.pop()).text
        seen |= {span for span, _, _ in rows(html)}
        for link in WAYS_ON.finditer(html):
            href = (link.group(1) or link.group(2)).replace("&amp;", "&").split("#")[0]
            url = start.split("?")[0] + href
            if url not in visited:
                visited.add(url)
                todo.append(url)
    return seen


def row_html(html: str, span_id: str) -> str:
    """The markup of one span's row, up to the next row."""
    start = html.index(f'<li id="span-{span_id}"')
    end = html.find('<li id="span-', start + 1)
    return html[start:end if end > 0 else None]


def test_the_page_draws_the_tree_in_order_with_a_bar_per_span(bench_server: RunningServer,
                                                              seeded: SeededRun) -> None:
    page = fetch(bench_server, f"/u/{seeded.path}/runs/{seeded.run_id}")
    assert page.status_code == 200
    ids = seeded.ids
    assert rows(page.text) == [
        (ids["research"], "d0", "success"), (ids["plan"], "d1", "success"),
        (ids["search"], "d1", "success"), (ids["fetch-1"], "d2", "success"),
        (ids["fetch-2"], "d2", "success"), (ids["parse"], "d3", "failed"),
        (ids["answer"], "d1", "success")]
    assert page.text.count('<svg class="wf"') == 7
    bars = dict(re.findall(r'aria-label="([^":]+): starts at [^"]+"><title>[^<]+</title>'
                           r'<rect class="wf-[a-z]+" x="([\d.]+)"', page.text))
    assert float(bars["research"]) == 0 and float(bars["plan"]) < float(bars["search"]) \
        < float(bars["fetch page 1"]) < float(bars["fetch page 2"]) < float(bars["answer"])
    flagged = {span for span in ids.values() if "failed below" in row_html(page.text, span)}
    assert flagged == {ids["research"], ids["search"], ids["fetch-2"]}
    assert "1 failed" in page.text and "owner-reported" in page.text
    assert "Unscored" in page.text or "Score" in page.text


def test_selecting_the_failed_span_three_levels_down_shows_its_error_without_javascript(
        bench_server: RunningServer, seeded: SeededRun) -> None:
    page = fetch(bench_server, f"/u/{seeded.path}/runs/{seeded.run_id}")
    link = re.search(r'href="([^"]*span=' + re.escape(seeded.ids["parse"]) + r'[^"]*)"',
                     page.text)
    assert link is not None
    chosen = fetch(bench_server, f"/u/{seeded.path}/runs/{seeded.run_id}" +
                   link.group(1).replace("&amp;", "&").split("#")[0])
    assert chosen.status_code == 200
    detail = chosen.text[chosen.text.index('class="span-detail"'):]
    assert ERROR in detail and "Error" in detail and "bytes" in detail and "1234" in detail
    assert 'aria-current="true"' in chosen.text


def test_a_span_whose_only_log_is_its_evidence_says_so_instead_of_an_empty_list(
        bench_server: RunningServer, seeded: SeededRun) -> None:
    page = fetch(bench_server, f"/u/{seeded.path}/runs/{seeded.run_id}?span="
                 + seeded.ids["answer"])
    detail = page.text[page.text.index('class="span-detail"'):]
    logs = detail[detail.index("<h3>Logs</h3>"):detail.index("<h3>Metadata</h3>")]
    assert "No log entries other than the evidence records below." in logs
    assert '<ol class="logs">' not in logs and "gpt-4o-mini" in logs
    search = fetch(bench_server, f"/u/{seeded.path}/runs/{seeded.run_id}?span="
                   + seeded.ids["search"]).text
    logs = search[search.index("<h3>Logs</h3>"):search.index("<h3>Metadata</h3>")]
    assert '<ol class="logs">' in logs and "found" in logs and "No log entries" not in logs


def test_a_subtask_id_redirects_to_its_run_with_the_span_selected(
        bench_server: RunningServer, seeded: SeededRun) -> None:
    response = httpx.get(f"{bench_server.url}/u/{seeded.path}/runs/{seeded.ids['parse']}",
                         headers={"Accept": "text/html"})
    assert response.status_code == 302
    assert response.headers["location"] == (f"/u/{seeded.path}/runs/{seeded.run_id}"
                                            f"?span={seeded.ids['parse']}#span-{seeded.ids['parse']}")


def test_the_json_twin_holds_every_span_in_the_order_the_page_draws_them(
        bench_server: RunningServer, seeded: SeededRun) -> None:
    answer = run_json(bench_server, seeded, key=seeded.key).json()
    page = fetch(bench_server, f"/u/{seeded.path}/runs/{seeded.run_id}", key=seeded.key)
    assert [s["task_id"] for s in answer["spans"]] == [r[0] for r in rows(page.text)]
    spans = {s["name"]: s for s in answer["spans"]}
    assert set(spans["parse"]) >= {"task_id", "parent_id", "depth", "name", "status",
                                   "start_offset_ms", "duration_ms", "cost_usd", "evidence",
                                   "input", "output", "logs", "metadata", "eval"}
    parse = spans["parse"]
    assert (parse["depth"], parse["status"], parse["output"], parse["parent_id"]) == (
        3, "failed", ERROR, seeded.ids["fetch-2"])
    assert parse["start_offset_ms"] == 950 and parse["duration_ms"] == 600
    assert parse["logs"][0]["data"] == {"label": "bytes", "value": 1234}
    assert spans["answer"]["evidence"]["records"][0]["model"] == "gpt-4o-mini"
    assert answer["span_count"] == 7 and answer["failed_spans"] == 1 and answer["depth"] == 3
    assert (answer["span_order"], answer["first_failed_span"]) == ("tree", seeded.ids["parse"])
    assert answer["next_cursor"] is None
    sub = run_json(bench_server, seeded, seeded.ids["parse"], key=seeded.key).json()
    assert sub["run_id"] == seeded.run_id and sub["requested_span"] == seeded.ids["parse"]


def test_the_json_twin_keeps_values_a_fast_encoder_refuses_exactly(
        bench_server: RunningServer) -> None:
    """An agent's own input may hold what orjson will not encode (an integer beyond 64 bits):
    the answer is still whole and exact."""
    login = new_login()
    key = bench_server.create_key(login)
    huge = 2 ** 70 + 1
    start, end = task_events("big", "count", input={"n": huge, "nested": [[-huge]]},
                             output={"ok": True})
    assert post(bench_server, batch("exact", [start, end]), key).status_code == 200
    answer = httpx.get(f"{bench_server.url}/api/agents/{login}/exact/runs/big",
                       headers={"X-Bench-Key": key}, timeout=30)
    assert answer.status_code == 200
    assert answer.json()["spans"][0]["input"] == {"n": huge, "nested": [[-huge]]}


def test_unknown_runs_are_404_on_page_and_json(bench_server: RunningServer,
                                               seeded: SeededRun) -> None:
    assert fetch(bench_server, f"/u/{seeded.path}/runs/nope").status_code == 404
    assert run_json(bench_server, seeded, "nope").status_code == 404
    bad = run_json(bench_server, seeded, cursor="%%%")
    assert bad.status_code == 400 and bad.json()["detail"][0]["loc"] == ["query", "cursor"]


def test_private_agent_runs_are_not_found_for_others_and_whole_for_the_owner(
        bench_server: RunningServer) -> None:
    run = seed_research_run(bench_server)
    set_agent(bench_server, run, visibility="private")
    other = bench_server.create_key(new_login())
    for key in (None, other):
        assert fetch(bench_server, f"/u/{run.path}/runs/{run.run_id}", key=key).status_code == 404
        assert fetch(bench_server, f"/u/{run.path}/runs", key=key).status_code == 404
        assert run_json(bench_server, run, key=key).status_code == 404
        assert httpx.get(f"{bench_server.url}/api/agents/{run.path}/runs",
                         headers={"X-Bench-Key": key} if key else {}).status_code == 404
    page = fetch(bench_server, f"/u/{run.path}/runs/{run.run_id}", key=run.key)
    assert page.status_code == 200 and 'name="robots" content="noindex"' in page.text
    assert "og:title" not in page.text


INPUT_SECRETS = ("secret-question",)
OUTPUT_SECRETS = ("secret-plan", "secret-final", "secret-answer", ERROR)
CONTENT_SECRETS = ("secret-log-value", "span_meta")
"""A log value and the SDK's metadata may carry either side: either switch hides them."""


@pytest.mark.parametrize("hide", [{"hide_inputs": True}, {"hide_outputs": True},
                                  {"hide_inputs": True, "hide_outputs": True}])
def test_hidden_content_is_hidden_in_every_field_of_page_and_json(
        bench_server: RunningServer, hide: dict[str, bool]) -> None:
    run = seed_research_run(bench_server)
    wait_until_judged(bench_server, run, 1)  # the judge's reasoning is derived content too
    set_agent(bench_server, run, **hide)
    hidden = (INPUT_SECRETS if hide.get("hide_inputs") else ()) + (
        OUTPUT_SECRETS if hide.get("hide_outputs") else ()) + CONTENT_SECRETS
    shown = tuple(s for s in SECRETS if s not in hidden)
    answer = run_json(bench_server, run).json()
    text = str(answer)
    assert all(secret not in text for secret in hidden), hidden
    assert all(secret in text for secret in shown), shown
    for span in answer["spans"]:
        assert (span["input"] == "[hidden by owner]") == bool(hide.get("hide_inputs"))
        assert (span["output"] == "[hidden by owner]") == bool(hide.get("hide_outputs"))
        assert span["metadata"] == "[hidden by owner]" and span["content_hidden"]
        assert all(e["data"] == "[hidden by owner]" or e["data"]["label"] in ("evidence", "cost")
                   for e in span["logs"])
    assert answer["eval"]["reasoning"] == answer["spans"][0]["eval"]["reasoning"] == \
        "[hidden by owner]"
    spans = {s["name"]: s for s in answer["spans"]}
    assert spans["answer"]["evidence"]["records"][0]["input_tokens"] == 1200  # usage stays
    for span_id in run.ids.values():
        page = fetch(bench_server, f"/u/{run.path}/runs/{run.run_id}?span={span_id}")
        assert page.status_code == 200
        assert all(secret not in page.text for secret in hidden), span_id
        assert "Hidden by the owner" in page.text
    listed = httpx.get(f"{bench_server.url}/api/agents/{run.path}/runs").json()
    assert all(secret not in str(listed) for secret in hidden)
    owner = run_json(bench_server, run, key=run.key).json()
    assert all(secret in str(owner) for secret in SECRETS)
    owner_page = fetch(bench_server, f"/u/{run.path}/runs/{run.run_id}?span={run.ids['parse']}",
                       key=run.key)
    assert ERROR in owner_page.text


def test_public_run_pages_carry_open_graph_tags(bench_server: RunningServer,
                                                seeded: SeededRun) -> None:
    page = fetch(bench_server, f"/u/{seeded.path}/runs/{seeded.run_id}").text
    assert '<meta property="og:title" content="research · ' in page
    assert f'/u/{seeded.path}/runs/{seeded.run_id}"' in page and "og:image" in page
    assert "7 spans, 1 failed" in page


def test_runs_list_filters_pages_and_links_each_run(bench_server: RunningServer) -> None:
    run = seed_research_run(bench_server)
    other_events = [
        {"id": uuid.uuid4().hex, "kind": "task.start", "ts": "2026-12-03T10:00:00.000Z",
         "task_id": f"quick-{i}", "name": "quick", "input": {"n": i}} for i in range(3)] + [
        {"id": uuid.uuid4().hex, "kind": "task.end", "ts": "2026-12-03T10:00:00.050Z",
         "task_id": f"quick-{i}", "name": "quick", "status": "success", "output": i,
         "duration_ms": 50} for i in range(3)]
    assert post(bench_server, batch(run.slug, other_events), run.key).status_code == 200
    page = fetch(bench_server, f"/u/{run.path}/runs")
    assert page.status_code == 200
    assert f'href="/u/{run.path}/runs/{run.run_id}"' in page.text
    assert page.text.count('class="run-link"') == 4
    api = f"{bench_server.url}/api/agents/{run.path}/runs"
    assert [r["name"] for r in httpx.get(api, params={"min_ms": 1000}).json()["runs"]] == ["research"]
    assert [r["name"] for r in httpx.get(api, params={"q": "QUI"}).json()["runs"]] == ["quick"] * 3
    assert httpx.get(api, params={"q": "secret-question"}).json()["runs"] == []
    owner = httpx.get(api, params={"q": "secret-question"}, headers={"X-Bench-Key": run.key})
    assert [r["name"] for r in owner.json()["runs"]] == ["research"]
    first = httpx.get(api, params={"limit": 2}).json()
    assert len(first["runs"]) == 2 and first["next_cursor"]
    rest = httpx.get(api, params={"limit": 2, "cursor": first["next_cursor"]}).json()
    assert len(rest["runs"]) == 2 and rest["next_cursor"] is None
    assert fetch(bench_server, f"/u/{run.path}/runs?status=success&name=quick&q=qu").text.count(
        'class="run-link"') == 3
    bad = httpx.get(api, params={"status": "nope"})
    assert bad.status_code == 400 and bad.json()["detail"][0]["loc"] == ["query", "status"]
    bad = httpx.get(api, params={"score_below": 2})
    assert bad.status_code == 400 and bad.json()["detail"][0]["loc"] == ["query", "score_below"]


def test_big_and_deep_runs_collapse_with_counts_and_open_on_demand(
        bench_server: RunningServer) -> None:
    """5,051 spans: more than one read, so the page draws the tree of the first 1,000 spans by
    start (950 leaves and the whole chain), and the header counts them all. Opened plainly it
    selects its one failure, 50 levels down, and draws the rows from it on under its
    ancestors; every collapsed row leads on, and so does the window, to the last span."""
    login = new_login()
    key = bench_server.create_key(login)
    prefix = uuid.uuid4().hex[:6]
    events = wide_and_deep_events(prefix, children=5000, depth=50)
    for i in range(0, len(events), 500):
        assert post(bench_server, batch("big", events[i:i + 500]), key).status_code == 200
    path = f"/u/{login}/big/runs/{prefix}-root"
    plain = fetch(bench_server, path)
    assert plain.status_code == 200
    assert rows(plain.text)[0][0] == f"{prefix}-deep49"  # selected and drawn first
    assert 'class="span-detail"' in plain.text and "Showing the spans from" in plain.text
    first = re.search(r'href="([^"]+)" data-first-failed>first at ([^<]+)</a>', plain.text)
    assert first is not None and f"span={prefix}-deep49" in first.group(1)
    page = fetch(bench_server, f"{path}?span={prefix}-root")  # from the top
    drawn = rows(page.text)
    assert len(drawn) < 700
    shown_leaves = sum(1 for span, _, _ in drawn if re.fullmatch(f"{prefix}-c\\d+", span))
    assert shown_leaves == 49  # 50 children drawn: 49 leaves and the deep chain's first level
    assert "+ 901 more spans under big run" in page.text  # 950 leaves read, 49 drawn
    assert ("This run has 5,050 spans below its root, more than one read takes: the tree here "
            "is drawn from 1,000 of them by start time") in page.text
    assert "<b>spans</b> 5,051<" in page.text and "· depth" not in page.text  # not read
    failure = fetch(bench_server, path + first.group(1).replace("&amp;", "&").split("#")[0])
    detail = failure.text[failure.text.index('class="span-detail"'):]
    assert "status-failed" in detail and f"{prefix}-deep49" in detail
    assert re.search(r"\+ \d+ deeper spans under level \d+, <span class=\"fail-text\">1 failed",
                     page.text)
    expanded = fetch(bench_server, f"{path}?expand={prefix}-root")
    assert "more spans under big run" not in expanded.text
    assert "· show them" in expanded.text  # the page still draws a bounded number, and goes on
    deeper = re.search(r'href="(\?[^"]*focus=[^"]+)" data-rows="[^"]+">\+ \d+ deeper', page.text)
    focused = fetch(bench_server, path + deeper.group(1).replace("&amp;", "&"))
    assert focused.status_code == 200 and "Showing the spans under" in focused.text
    seen = reached(bench_server, path + f"?span={prefix}-root")
    every = {f"{prefix}-root", *(f"{prefix}-c{i}" for i in range(5000)),
             *(f"{prefix}-deep{i}" for i in range(50))}
    assert seen == every  # every span, by following the page's own links
    answer = httpx.get(f"{bench_server.url}/api/agents/{login}/big/runs/{prefix}-root").json()
    assert len(answer["spans"]) == 1000 and answer["span_count"] == 5051
    assert (answer["span_order"], answer["failed_spans"], answer["first_failed_span"]) == (
        "start", 1, f"{prefix}-deep49")
    seen = [s["task_id"] for s in answer["spans"]]
    while answer["next_cursor"]:
        answer = httpx.get(f"{bench_server.url}/api/agents/{login}/big/runs/{prefix}-root",
                           params={"cursor": answer["next_cursor"]}).json()
        assert (answer["span_count"], answer["failed_spans"]) == (5051, 1)
        seen += [s["task_id"] for s in answer["spans"]]
    assert len(seen) == len(set(seen)) == 5051
    assert seen[0] == f"{prefix}-root" and all(s["depth"] is None for s in answer["spans"])


def test_the_run_json_is_documented_in_the_openapi_schema_as_answered(
        bench_server: RunningServer, seeded: SeededRun) -> None:
    spec = httpx.get(f"{bench_server.url}/api/openapi.json").json()
    assert "/api/agents/{login}/{slug}/runs" in spec["paths"]
    schemas = spec["components"]["schemas"]
    run_schema = spec["paths"]["/api/agents/{login}/{slug}/runs/{task_id}"]["get"][
        "responses"]["200"]["content"]["application/json"]["schema"]
    assert run_schema == {"$ref": "#/components/schemas/RunAnswer"}
    answer = run_json(bench_server, seeded).json()
    assert set(answer) <= set(schemas["RunAnswer"]["properties"])
    assert set(schemas["RunAnswer"]["required"]) <= set(answer)
    assert set(answer["spans"][0]) == set(schemas["Span"]["properties"])


def test_searching_a_run_finds_spans_by_name_and_by_the_content_its_viewer_may_see(
        bench_server: RunningServer) -> None:
    """`q` draws the spans holding it with their ancestors; content counts only where the
    privacy gate shows it: a visitor of an agent that hides its outputs finds an answer's
    text in no span, its owner finds it in the span that answered."""
    run = seed_research_run(bench_server)
    path = f"/u/{run.path}/runs/{run.run_id}"
    by_name = fetch(bench_server, path + "?q=PARS")
    assert [span for span, _, _ in rows(by_name.text)] == [
        run.run_id, run.ids["search"], run.ids["fetch-2"], run.ids["parse"]]
    assert re.search(r'class="span-row d3 failed match"', by_name.text)
    assert "1 span here holds “PARS”" in by_name.text
    by_content = fetch(bench_server, path + "?q=secret-question")  # the root's and plan's input
    assert [span for span, _, _ in rows(by_content.text)] == [run.run_id, run.ids["plan"]]
    set_agent(bench_server, run, hide_outputs=True)
    for key, found in ((None, []), (run.key, [run.run_id, run.ids["answer"]])):
        answer = fetch(bench_server, path + "?q=secret-answer", key=key)
        assert [span for span, _, _ in rows(answer.text)] == found
    hidden = fetch(bench_server, path + "?q=secret-log-value")  # a log value: content
    assert rows(hidden.text) == [] and "0 spans here hold" in hidden.text


def test_each_row_shows_the_model_its_span_called_and_its_tokens(
        bench_server: RunningServer, seeded: SeededRun) -> None:
    """The answer span's evidence record names gpt-4o-mini with 1,200 tokens in and 300 out:
    its row says so to a visitor (evidence is public), as the root's sums what is below it."""
    page = fetch(bench_server, f"/u/{seeded.path}/runs/{seeded.run_id}?span={seeded.run_id}")
    answer = row_html(page.text, seeded.ids["answer"])
    assert 'class="meta optional model" title="gpt-4o-mini">gpt-4o-mini<' in answer
    assert ">1,200/300<" in answer
    assert ">1,200/300<" in row_html(page.text, seeded.run_id)
    assert 'model" title=""><' in row_html(page.text, seeded.ids["plan"])


def test_the_next_error_of_a_big_run_is_a_click_away_whichever_window_it_is_in(
        bench_server: RunningServer) -> None:
    """3,000 spans, failed 1,000 and 2,000 (and 3,000 does not exist): opened on the first
    failure, the page links the next one, which lies in a later window; there the previous
    links back."""
    login = new_login()
    key = bench_server.create_key(login)
    run = f"errs-{uuid.uuid4().hex[:6]}"
    events = tree_run_events(run, 3000, failed_every=1000)
    for i in range(0, len(events), 500):
        assert post(bench_server, batch("errs", events[i:i + 500]), key).status_code == 200
    path = f"/u/{login}/errs/runs/{run}"
    page = fetch(bench_server, path)
    assert re.search(rf'class="span-row d\d+ failed selected" data-span="{run}-1000"', page.text)
    following = re.search(r'href="([^"]+)" data-error-next>', page.text)
    assert following is not None and f"span={run}-2000" in following.group(1)
    assert "data-error-previous" not in page.text
    second = fetch(bench_server, path + following.group(1).replace("&amp;", "&").split("#")[0])
    assert re.search(rf'class="span-row d\d+ failed selected" data-span="{run}-2000"',
                     second.text)
    back = re.search(r'href="([^"]+)" data-error-previous>', second.text)
    assert back is not None and f"span={run}-1000" in back.group(1)
    assert "data-error-next" not in second.text
