"""The judge's agreement with people over real HTTP, on SQLite and DynamoDB (moto): feedback on
judged runs shows on the agent's JSON and profile next to the judge's score, and the
leaderboard marks a score whose agreement is unknown (no labelled runs) or low (kappa < 0.4)."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from bench_core.evals import workflow
from bench_core.ports.workflows import eval_start

from tests.conftest import RunningServer, poll
from tests.http.feedback_support import give
from tests.http.test_leaderboard_runs import board_row, run, seed


def scored_runs(server: RunningServer, path: str) -> dict[str, float]:
    """The runs' judge scores, once each is judged: here (as the eval function would) when the
    server runs no eval workflow of its own (over DynamoDB), else by its worker pool."""
    if server.services.settings.store == "dynamodb":
        run_ids = [r["run_id"] for r in server.get(f"/api/agents/{path}/runs")["runs"]]
        workflow.run_eval(server.services, eval_start(path, run_ids))
    runs = poll(lambda: server.get(f"/api/agents/{path}/runs")["runs"],
                lambda found: len(found) == 5 and all(
                    r["eval"] is not None and r["eval"]["status"] == "scored" for r in found))
    return {r["run_id"]: r["eval"]["score"] for r in runs}


def board_mark(server: RunningServer, tag: str) -> str | None:
    page = httpx.get(f"{server.url}/leaderboard", params={"q": tag}, timeout=30).text
    marks = re.findall(r'data-agreement="(\w+)"', page)
    assert len(marks) <= 1
    return marks[0] if marks else None


def agreement(server: RunningServer, path: str, n: int) -> dict[str, Any]:
    return poll(lambda: server.get(f"/api/agents/{path}")["judge_agreement"],
                lambda shown: shown["n"] == n)


def test_feedback_on_judged_runs_shows_the_judges_agreement(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    login, tag = seed(server, run("good", 100_000, "answer"),
                      run("bad", 101_000, "answer", status="failed"))
    path, owner_key = f"{login}/agent", server.create_key(login)
    scores = scored_runs(server, path)
    assert scores["bad"] < 0.5 and scores["good"] >= 0.5, scores
    assert board_row(server, tag)["judge_agreement"]["level"] == "unknown"
    assert board_mark(server, tag) == "unknown"

    passed = sorted(run_id for run_id, score in scores.items() if score >= 0.5 and run_id != "good")
    verdicts = {"bad": "down", "good": "up", passed[0]: "up", passed[1]: "down"}
    for run_id, thumbs in verdicts.items():
        assert give(server, path, run_id, {"thumbs": thumbs}, owner_key).status_code == 201
    shown = agreement(server, path, 4)
    assert shown["table"] == {"pp": 2, "pf": 1, "fp": 0, "ff": 1}
    assert shown["accuracy"] == pytest.approx(0.75)
    assert shown["kappa"] == pytest.approx(0.5)  # po .75, pe .75·.5 + .25·.5 = .5
    assert shown["level"] == "ok" and board_mark(server, tag) is None
    page = httpx.get(f"{server.url}/u/{path}", timeout=30).text
    assert 'data-metric="judge_agreement.n" data-value="4"' in page
    assert 'data-metric="judge_agreement.kappa" data-value="0.5">0.50<' in page
    assert 'data-metric="judge_agreement.accuracy" data-value="0.75">75%<' in page

    assert give(server, path, passed[2], {"thumbs": "down"}, owner_key).status_code == 201
    shown = agreement(server, path, 5)  # po .6, pe .8·.4 + .2·.6 = .44: kappa .16/.56
    assert shown["kappa"] == pytest.approx(0.16 / 0.56) and shown["level"] == "low"
    assert board_row(server, tag)["judge_agreement"]["level"] == "low"
    assert board_mark(server, tag) == "low"
    assert "agreement-low" in httpx.get(f"{server.url}/u/{path}", timeout=30).text
