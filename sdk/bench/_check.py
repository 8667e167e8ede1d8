"""``bench check``: gate a CI job on whether a new version of an agent is worse than the one
before it, by the server's own comparison (``GET /api/agents/<login>/<slug>/versions/check``:
the compare page's tests, Bonferroni over the lines tested), or a benchmark run worse than the
agent's run before it (``GET /api/benchmarks/runs/<id>/check``: paired by case).

Standard library only. The exit status is the answer, so a workflow step needs no parsing:
0 better or within noise, 1 worse (the evidence printed), 2 not enough runs yet,
3 the check could not be made (bad input, unknown agent or version, server unreachable).
"""

from __future__ import annotations

import json
from typing import Any, List, Optional
from urllib.parse import quote, urlencode

from bench import _http
from bench._reuse import ReuseError, key_login

TIMEOUT = 30.0
EXIT = {"pass": 0, "worse": 1, "insufficient": 2}
EXIT_ERROR = 3
"""Anything but an answer: distinct from the three answers, so a CI job never reads a typo as
"worse" or "wait"."""


class CheckError(Exception):
    """The check could not be made; one line, exit status `EXIT_ERROR`."""


def agent_path(server: str, agent: str, key: Optional[str]) -> str:
    """``login/slug`` from ``login/slug``, ``@login/slug`` or a bare slug (the key's login)."""
    path = agent.lstrip("@").strip("/")
    if path.count("/") == 1 and all(path.split("/")):
        return path
    if "/" in path or not path:
        raise CheckError(f"--agent must be SLUG or LOGIN/SLUG, not {agent!r}")
    if not key:
        raise CheckError(f"--agent {agent} names no login: pass LOGIN/SLUG, or set BENCH_KEY")
    try:
        return f"{key_login(server, key)}/{path}"
    except ReuseError as exc:
        raise CheckError(str(exc)) from exc


def check(server: str, key: Optional[str], agent: str, version: str, against: Optional[str],
          min_runs: Optional[int]) -> dict[str, Any]:
    """The server's verdict on a version (a dict with ``status`` among `EXIT`'s keys), or a
    CheckError."""
    path = agent_path(server, agent, key)
    query = {"version": version, **({"against": against} if against else {}),
             **({"min_runs": str(min_runs)} if min_runs is not None else {})}
    return _ask(f"{server}/api/agents/{quote(path)}/versions/check?{urlencode(query)}", key)


def check_benchmark(server: str, key: Optional[str], run_id: str, against: Optional[str],
                    min_cases: Optional[int]) -> dict[str, Any]:
    """The server's verdict on a benchmark run against the agent's run before it."""
    query = {**({"against": against} if against else {}),
             **({"min_cases": str(min_cases)} if min_cases is not None else {})}
    return _ask(f"{server}/api/benchmarks/runs/{quote(run_id, safe='')}/check?{urlencode(query)}",
                key)


def _ask(url: str, key: Optional[str]) -> dict[str, Any]:
    try:
        reply = _http.request("GET", url, key, timeout=TIMEOUT)
    except ConnectionError as exc:
        raise CheckError(str(exc)) from exc
    if reply.status == 401:
        raise CheckError("the server rejected the key (401); check BENCH_KEY or run `bench login`")
    if not reply.ok or not isinstance(reply.payload, dict) or reply.payload.get("status") not in EXIT:
        fields = f": {reply.fields}" if reply.fields else ""
        raise CheckError(f"{reply.error} ({reply.status}){fields}")
    return reply.payload


def _side(summary: dict[str, Any]) -> str:
    return f"{summary['version']} ({summary['runs']} runs)"


def benchmark_lines(answer: dict[str, Any]) -> List[str]:
    """What ``bench check --benchmark-run`` prints: the verdict, then each paired test."""
    run, base = answer["run"], answer["against"]
    heading = {"pass": "no regression (better or within noise)", "worse": "WORSE beyond noise",
               "insufficient": f"not enough yet (both graded, at least {answer['min_cases']} cases)"}
    out = [f"{run['agent']} on {run['suite']}: run {run['run_id']} against {base['run_id']} "
           f"({answer['cases']} cases): {heading[answer['status']]}"]
    worse = set(answer.get("worse") or ())
    for line in answer["lines"]:
        mark = "✗" if line["key"] in worse else " "
        out.append(f" {mark} {line['title']}: {line['lost']} cases worse, {line['gained']} better "
                   f"(p = {line['p_value']:.2g}; {line['method']})")
    if worse:
        out.append(f"   worse means p < {answer['threshold']:.3g} and more cases lost than gained")
    return out


def report_lines(answer: dict[str, Any]) -> List[str]:
    """What ``bench check`` prints: the verdict, then each line of the comparison, the worse
    ones marked, with their p-value and the threshold they were held to."""
    if "run" in answer:
        return benchmark_lines(answer)
    newer, older = answer["newer"], answer["older"]
    heading = {"pass": "no regression (better or within noise)",
               "worse": "WORSE beyond noise",
               "insufficient": f"not enough runs yet (at least {answer['min_runs']} on each side)"}
    out = [f"{answer['agent']}: {_side(newer)} against {_side(older)}: {heading[answer['status']]}"]
    worse = set(answer.get("worse") or ())
    for line in answer["lines"]:
        mark = "✗" if line["key"] in worse else " "
        p = "" if line["p_value"] is None or ", p" in line["says"] else f" (p = {line['p_value']:.2g})"
        out.append(f" {mark} {line['title']}: {line['newer']} vs {line['older']}: {line['says']}{p}")
    if worse:
        out.append(f"   worse means p < {answer['threshold']:.3g} "
                   f"({answer['alpha']:g} over the lines tested) and the newer version behind")
    return out


def as_json(answer: dict[str, Any]) -> str:
    return json.dumps(answer, indent=2, ensure_ascii=False)
