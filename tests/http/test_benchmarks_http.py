"""Benchmarks over HTTP on a real server: submitting runs (keys, validation, the registry's
409), aggregates recomputed by the server, privacy of runs, and the pages."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import httpx
import pytest
from bench._benchmark import run_lines, value_hash
from bench_core.benchmarks.aggregate import summarize
from bench_core.benchmarks.suites import load_suite
from bench_core.domain.models import AgentRef
from bench_core.settings import LLMSettings

from tests.benchmark_support import SUITE, graded_run, new_slug, run_body, suite_document, with_output
from tests.conftest import RunningServer, start_server
from tests.fake_openai import Reply, fake_openai, verdict

RUNS = f"/api/benchmarks/{SUITE}/runs"


def login() -> str:
    return "u" + new_slug()


def post(server: RunningServer, key: str | None, body: Any, suite: str = SUITE) -> httpx.Response:
    headers = {"X-Bench-Key": key} if key else {}
    return httpx.post(f"{server.url}/api/benchmarks/{suite}/runs", json=body, headers=headers, timeout=30)


@pytest.fixture(scope="module")
def owner(bench_server: RunningServer) -> tuple[str, str]:
    name = login()
    return name, bench_server.create_key(name)


def submitted(server: RunningServer, key: str, body: Any) -> dict[str, Any]:
    """The run once graded in the background (its submission answered 202)."""
    return graded_run(server.url, post(server, key, body), key)


def test_a_run_is_graded_and_summarised_by_the_server(bench_server: RunningServer, owner: tuple[str, str]) -> None:
    name, key = owner
    slug = new_slug()
    r = post(bench_server, key, run_body(slug, repeats=2, display_name="Extractive"))
    assert r.status_code == 202, r.text
    accepted = r.json()
    assert accepted["status"] in ("pending", "grading") and accepted["pass_rate"] is None
    assert accepted["progress"]["total"] > 0 and "in the background" in accepted["message"]
    # A client from before background grading (it printed the 201's graded run with this very
    # printer) prints where the run is and that it is being graded, instead of failing.
    printed = "\n".join(run_lines(accepted, bench_server.url))
    assert f"run {accepted['id']}" in printed and bench_server.url + accepted["url"] in printed
    assert "judge pending: grading in the background" in printed and "bench benchmark show" in accepted["message"]
    run = graded_run(bench_server.url, r, key)
    assert run["status"] == "done" and run["run_id"] == accepted["id"]
    assert run["progress"]["graded"] == run["progress"]["total"] == accepted["progress"]["total"]
    assert run["label"] == "benchmark evidence" and run["agent"] == f"{name}/{slug}"
    assert run["judge"] == "grounding-heuristic-v1" and run["suite_hash"] == load_suite(SUITE).content_hash
    s = run["summary"]
    cases = len(load_suite(SUITE).suite.cases)
    assert (s["k"], s["cases"], s["attempts"], s["errors"]) == (2, cases, 2 * cases, 2)
    assert 0 < s["pass_rate"] < 1 and s["pass_hat_k"] == s["pass_at_k"]  # the example is deterministic
    crashed = [a for a in run["attempts"] if a["case_id"] == "meeting-time-zones"]
    assert [a["status"] for a in crashed] == ["error", "error"] and all(a["score"] == 0 for a in crashed)
    assert "time-zone arithmetic" in crashed[0]["reasoning"]
    stored = bench_server.store.benchmarks.get_benchmark_run(run["run_id"])
    assert stored is not None and len(stored.attempts) == 2 * cases
    assert stored.summary == summarize(stored.attempts, [c.id for c in load_suite(SUITE).suite.cases], 2)
    first = stored.attempts[0]
    assert first.input["question"] and first.input["instructions"] and first.output_hash == value_hash(first.output)
    assert bench_server.store.agents.get_agent(AgentRef(name, slug)).display_name == "Extractive"
    again = bench_server.get(f"/api/benchmarks/{SUITE}/runs/{run['run_id']}")
    assert again["summary"] == s and bench_server.get(f"/api/benchmarks/runs/{run['run_id']}")["summary"] == s


def test_a_tampered_summary_and_self_awarded_scores_are_ignored(bench_server: RunningServer,
                                                                 owner: tuple[str, str]) -> None:
    _, key = owner
    honest = submitted(bench_server, key, run_body(new_slug()))["summary"]
    body = run_body(new_slug(), summary={"pass_rate": 1.0, "pass_hat_k": 1.0, "pass_at_k": 1.0})
    for a in body["attempts"]:
        a.update(score=1.0, judge="me", reasoning="perfect")
    r = post(bench_server, key, body)
    assert r.status_code == 202, r.text
    assert r.json()["pass_rate"] is None, "nothing before grading"
    run = graded_run(bench_server.url, r, key)
    assert run["summary"] == honest and run["summary"]["pass_rate"] < 1
    assert {a["judge"] for a in run["attempts"]} == {"grounding-heuristic-v1"}


def test_a_changed_suite_under_the_same_version_is_refused(bench_server: RunningServer,
                                                           owner: tuple[str, str]) -> None:
    _, key = owner
    changed = suite_document()
    changed["cases"][0]["facts"][0]["terms"] = [["block"]]  # an easier case, same version
    slug = new_slug()
    r = post(bench_server, key, run_body(slug, document=changed))
    assert r.status_code == 409, r.text
    assert "never changes" in r.json()["error"] and "grounded-research-v2" in r.json()["error"]
    assert r.json()["detail"][0]["loc"] == ["suite_hash"]
    assert bench_server.store.benchmarks.benchmark_runs_of(AgentRef(owner[0], slug), 5) == []


def test_a_server_whose_suite_changed_under_a_published_version_refuses_runs(tmp_path: Path) -> None:
    server, uvicorn_server, thread = start_server(tmp_path, store="memory")
    try:
        key = server.create_key("carol")
        incomplete = run_body("agent")
        incomplete["attempts"].pop()
        assert post(server, key, incomplete).status_code == 422
        assert server.store.benchmarks.registered_suites() == {}  # a refused run publishes nothing
        server.store.benchmarks.register_suite(SUITE, "sha256:" + "0" * 64, "2026-01-01T00:00:00.000Z")
        r = post(server, key, run_body("agent"))
        assert r.status_code == 409 and "this server's copy" in r.json()["error"]
        assert server.store.agents.get_agent(AgentRef("carol", "agent")) is None
    finally:
        uvicorn_server.should_exit = True
        thread.join(timeout=10)


@pytest.mark.parametrize("failure", [Reply(status=503), Reply(status=401), Reply(raw="not a completion")],
                         ids=["unavailable", "refused", "garbled"])
def test_a_failing_judge_fails_the_run_naming_it_and_a_resubmission_grades_it(
        tmp_path: Path, failure: Reply) -> None:
    with fake_openai(failure) as judge:
        server, uvicorn_server, thread = start_server(
            tmp_path, store="memory",
            llm=LLMSettings(provider="openai_compat", url=judge.url, model="judge-model", timeout_s=5))
        try:
            key = server.create_key("dora")
            body = run_body("graded", repeats=1, nonce="same-run-again")
            r = post(server, key, body)
            failed = graded_run(server.url, r, key)
            assert failed["status"] == "failed", failed
            assert failed["error"] == ("the benchmark judge (openai_compat:judge-model) was unavailable: "
                                       "submit the run again to resume its grading")
            assert failed["summary"] is None and failed["pass_rate"] is None
            assert judge.url not in str(failed), "the judge's address is the server's business"
            assert judge.requests, "the judge was asked"
            assert server.store.benchmarks.benchmark_runs_of(AgentRef("dora", "graded"), 5) == []
            assert server.store.benchmarks.benchmark_ranking(SUITE, limit=10) == []
            page = httpx.get(f"{server.url}{failed['url']}", headers={"X-Bench-Key": key})
            assert page.status_code == 200 and "Grading failed" in page.text and "submit the run again" in page.text
            judge.script(verdict(0.9))
            again = post(server, key, body)
            graded = graded_run(server.url, again, key)
            assert graded["status"] == "done" and graded["run_id"] == failed["run_id"]
            assert {a["judge"] for a in graded["attempts"] if a["status"] == "ok"} == {
                "openai_compat:judge-model"}
            assert [r.run_id for r in server.store.benchmarks.benchmark_runs_of(AgentRef("dora", "graded"), 5)] == [
                graded["run_id"]]
        finally:
            uvicorn_server.should_exit = True
            thread.join(timeout=10)


@pytest.mark.parametrize(("change", "status", "loc"), [
    (lambda b: b["attempts"][0].update(output_hash="sha256:" + "f" * 64), 422, ["attempts", 0, "output_hash"]),
    (lambda b: b["attempts"][1].update(output="edited after hashing"), 422, ["attempts", 1, "output_hash"]),
    (lambda b: b["attempts"].pop(), 422, ["attempts"]),
    (lambda b: b["attempts"].append(copy.deepcopy(b["attempts"][0])), 422, ["attempts", 44]),
    (lambda b: b["attempts"][2].update(case_id="no-such-case"), 422, ["attempts", 2, "case_id"]),
    (lambda b: b["attempts"][3].update(repeat=5), 422, ["attempts", 3, "repeat"]),
    (lambda b: b["attempts"][4].update(input={"question": "other"}), 422, ["attempts", 4, "input"]),
    (lambda b: b["attempts"][5].update(status="great"), 422, ["attempts", 5, "status"]),
    (lambda b: b["attempts"][6].update(duration_ms=-1), 422, ["attempts", 6, "duration_ms"]),
    (lambda b: b.update(agent_slug="not a slug!"), 422, ["agent_slug"]),
    (lambda b: b.update(surprise=1), 422, ["surprise"]),
    (lambda b: b.pop("suite_hash"), 422, ["suite_hash"]),
])
def test_bad_runs_are_refused_naming_the_field_and_store_nothing(bench_server: RunningServer, owner: tuple[str, str],
                                                                 change: Any, status: int, loc: list[Any]) -> None:
    name, key = owner
    slug = new_slug()
    body = run_body(slug)
    change(body)
    r = post(bench_server, key, body)
    assert r.status_code == status, r.text
    assert r.json()["detail"][0]["loc"] == loc
    assert bench_server.store.agents.get_agent(AgentRef(name, slug)) is None


def test_not_json_and_unknown_suites(bench_server: RunningServer, owner: tuple[str, str]) -> None:
    r = httpx.post(bench_server.url + RUNS, content=b"{nope", headers={"X-Bench-Key": owner[1]})
    assert r.status_code == 400 and r.json()["error"] == "body is not valid JSON"
    r = post(bench_server, owner[1], run_body(new_slug()), suite="grounded-research-v9")
    assert r.status_code == 404 and "unknown benchmark suite" in r.json()["error"]
    assert httpx.get(bench_server.url + "/api/benchmarks/nope-v1").status_code == 404


def test_keys_owner_for_any_agent_agent_keys_for_their_own(bench_server: RunningServer) -> None:
    name = login()
    slug = new_slug()
    agent_key = bench_server.create_key(name, slug)
    assert post(bench_server, None, run_body(slug)).status_code == 401
    assert post(bench_server, "bk_" + "x" * 40, run_body(slug)).status_code == 401
    assert post(bench_server, agent_key, run_body(slug)).status_code == 202
    r = post(bench_server, agent_key, run_body(new_slug()))
    assert r.status_code == 403 and "may not write" in r.json()["error"]


def test_a_resubmitted_run_is_stored_once(bench_server: RunningServer, owner: tuple[str, str]) -> None:
    slug = new_slug()
    body = run_body(slug, nonce="retry-" + slug)
    first = post(bench_server, owner[1], body)
    graded = graded_run(bench_server.url, first, owner[1])
    second = post(bench_server, owner[1], body)
    assert second.status_code == 200, "already graded: where it is, not accepted again"
    assert first.json()["run_id"] == second.json()["run_id"] == graded["run_id"]
    assert second.json()["status"] == "done" and second.json()["pass_rate"] == graded["pass_rate"]
    assert len(bench_server.store.benchmarks.benchmark_runs_of(AgentRef(owner[0], slug), 5)) == 1


def test_the_registry_serves_suites_with_their_hash_and_definition(bench_server: RunningServer,
                                                                   owner: tuple[str, str]) -> None:
    submitted(bench_server, owner[1], run_body(new_slug()))
    suite = bench_server.get(f"/api/benchmarks/{SUITE}")
    assert suite["content_hash"] == suite["published_hash"] == value_hash(suite["definition"])
    assert suite["definition"] == suite_document()
    listing = bench_server.get("/api/benchmarks")
    (entry,) = [s for s in listing["suites"] if s["name"] == "grounded-research"]
    (version,) = entry["versions"]
    assert version["suite"] == SUITE and version["published"] and version["top"]
    assert entry["label"] == "benchmark evidence"
    ranks = [r["pass_rate"] for r in bench_server.get(f"/api/benchmarks/{SUITE}")["ranking"]]
    assert ranks == sorted(ranks, reverse=True)


def test_private_agents_runs_appear_to_their_owner_only(bench_server: RunningServer) -> None:
    name = login()
    key = bench_server.create_key(name)
    slug = new_slug()
    perfect = run_body(slug, repeats=1)
    for i, case in enumerate(suite_document()["cases"]):
        perfect = with_output(perfect, i, " ".join(f"{f['claim']} [{f['sources'][0]}]" for f in case["facts"]))
    run = submitted(bench_server, key, perfect)
    assert run["summary"]["pass_rate"] == 1.0
    top = bench_server.get(f"/api/benchmarks/{SUITE}")["ranking"][0]
    assert top["run_id"] == run["run_id"]
    patched = httpx.patch(f"{bench_server.url}/api/agents/{name}/{slug}", json={"visibility": "private"},
                          headers={"X-Bench-Key": key})
    assert patched.status_code == 200
    assert run["run_id"] not in {r["run_id"] for r in bench_server.get(f"/api/benchmarks/{SUITE}")["ranking"]}
    for s in bench_server.get("/api/benchmarks", top=50)["suites"]:
        assert all(r["run_id"] != run["run_id"] for v in s["versions"] for r in v["top"])
    for path in (f"/api/benchmarks/{SUITE}/runs/{run['run_id']}", f"/api/benchmarks/runs/{run['run_id']}",
                 f"/benchmarks/{SUITE}/runs/{run['run_id']}"):
        assert httpx.get(bench_server.url + path).status_code == 404, path
        assert httpx.get(bench_server.url + path, headers={"X-Bench-Key": key}).status_code == 200, path
    assert run["run_id"] not in httpx.get(bench_server.url + f"/benchmarks/{SUITE}").text


def test_hidden_outputs_and_inputs_stay_hidden_in_runs(bench_server: RunningServer) -> None:
    name = login()
    key = bench_server.create_key(name)
    slug = new_slug()
    run = submitted(bench_server, key, run_body(slug, repeats=1))
    httpx.patch(f"{bench_server.url}/api/agents/{name}/{slug}", json={"hide_outputs": True, "hide_inputs": True},
                headers={"X-Bench-Key": key}).raise_for_status()
    public = bench_server.get(f"/api/benchmarks/runs/{run['run_id']}")
    assert all(a["output"] == a["input"] == a["reasoning"] == "[hidden by owner]" for a in public["attempts"])
    assert {a["error"] for a in public["attempts"]} == {None, "[hidden by owner]"}
    assert {a["output_hash"] for a in public["attempts"]} == {"[hidden by owner]"}, \
        "a hash names a short output: anyone can hash guesses"
    assert public["summary"] == run["summary"]
    page = httpx.get(f"{bench_server.url}/benchmarks/{SUITE}/runs/{run['run_id']}").text
    assert "According to the sources" not in page and "Hidden by the owner" in page
    owner_view = bench_server.get(f"/api/benchmarks/runs/{run['run_id']}", key=key)
    assert owner_view["attempts"][0]["output"].startswith("According to the sources")
    hashes = {a["output_hash"] for a in owner_view["attempts"]}
    assert all(h.startswith("sha256:") for h in hashes)
    assert not any(h in page for h in hashes)
    httpx.patch(f"{bench_server.url}/api/agents/{name}/{slug}", json={"hide_inputs": False},
                headers={"X-Bench-Key": key}).raise_for_status()
    inputs_shown = bench_server.get(f"/api/benchmarks/runs/{run['run_id']}")
    assert {a["output_hash"] for a in inputs_shown["attempts"]} == {"[hidden by owner]"}
    httpx.patch(f"{bench_server.url}/api/agents/{name}/{slug}",
                json={"hide_inputs": True, "hide_outputs": False},
                headers={"X-Bench-Key": key}).raise_for_status()
    outputs_shown = bench_server.get(f"/api/benchmarks/runs/{run['run_id']}")
    assert {a["output_hash"] for a in outputs_shown["attempts"]} == hashes


def test_pages_show_rankings_runs_and_evidence_apart_from_telemetry(bench_server: RunningServer) -> None:
    name = login()
    key = bench_server.create_key(name)
    slug = new_slug()
    run = submitted(bench_server, key, run_body(slug, display_name="Page Agent"))
    html = {"Accept": "text/html"}
    registry = httpx.get(bench_server.url + "/benchmarks", headers=html)
    assert registry.status_code == 200 and "grounded-research" in registry.text and "Ranking" in registry.text
    suite = httpx.get(f"{bench_server.url}/benchmarks/{SUITE}", headers=html)
    assert suite.status_code == 200 and "sqlite-wal-concurrency" in suite.text and "Page Agent" in suite.text
    page = httpx.get(bench_server.url + run["url"], headers=html)
    assert page.status_code == 200
    s = run["summary"]
    for text in ("benchmark evidence", "95% CI", "pass^2", "pass@2", 'data-case="meeting-time-zones"',
                 f'data-value="{s["pass_rate"]}"', "grounding-heuristic-v1"):
        assert text in page.text, text
    # the agent the submission made hides its content until its owner shows it
    assert "time-zone arithmetic" not in page.text and "Hidden by the owner" in page.text
    owners_page = httpx.get(bench_server.url + run["url"], headers={**html, "X-Bench-Key": key})
    assert "time-zone arithmetic" in owners_page.text
    profile = httpx.get(f"{bench_server.url}/u/{name}/{slug}", headers=html).text
    telemetry, evidence = profile.split('data-section="benchmark-evidence"')
    assert "Benchmark evidence" in evidence and run["url"] in evidence and run["url"] not in telemetry
    assert "owner-reported" in telemetry and "owner telemetry" in evidence
    compare = httpx.get(f"{bench_server.url}/vs/@{name}/{slug}/@{name}/{slug}", headers=html).text
    assert 'data-section="benchmark-evidence"' in compare and run["url"] in compare
    missing = httpx.get(f"{bench_server.url}/benchmarks/{SUITE}/runs/nope", headers=html)
    assert missing.status_code == 404 and "text/html" in missing.headers["content-type"]
