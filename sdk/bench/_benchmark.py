"""``bench benchmark run|list|show``: run an agent on a benchmark suite and submit the evidence.

Standard library only. Grading happens on the server, not here: the server must grade every
submitted attempt itself anyway (it never trusts a client's scores or summary), a second grader
in the SDK would be a copy that drifts, and the SDK stays free of model clients. The runner's
job is the evidence: each attempt's output with its SHA-256 (``sha256:`` of the canonical JSON,
the same bytes the server hashes), its duration, and whether the agent answered, raised or
timed out. The server accepts the run (202) and grades it in the background; the runner polls
the run until it is graded (or ``--wait`` seconds pass) and prints it.

The suite comes from ``benchmarks/<suite>/`` under the current directory when present (a suite
being written), else from the server (``GET /api/benchmarks/<suite>``). A local suite that
differs from the published version is refused by the server (409): a published suite never
changes.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import inspect
import json
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, TextIO

from bench import _http
from bench._serialize import format_ts
from bench._version import SDK_NAME, __version__

REQUEST_TIMEOUT = 30.0
SUBMIT_TRIES = 3
DEFAULT_WAIT_S = 900.0
"""How long ``bench benchmark run`` waits for the server to grade the run."""
POLL_S = (0.5, 5.0)
"""The first and the longest pause between two looks at a run being graded."""
GRADING = ("pending", "grading")


class BenchmarkError(Exception):
    """A failure to report as one line: bad agent path, unknown suite, refused run."""


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no spaces, UTF-8: the bytes the server hashes too."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def value_hash(value: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()


# ── the agent ────────────────────────────────────────────────────────────────────────────────

def load_agent(path: str) -> Callable[[Dict[str, Any]], Any]:
    """``module:function`` (the current directory importable, like ``python -m``)."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise BenchmarkError(f"--agent must be module:function, not {path!r}")
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import-time failure of the user's module is one line
        raise BenchmarkError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from exc
    target: object = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise BenchmarkError(f"module {module_name!r} has no {attr!r}")
    if not callable(target):
        raise BenchmarkError(f"{path} is not callable")
    return target


@dataclass
class Outcome:
    status: str
    output: Any = None
    error: Optional[str] = None
    duration_ms: float = 0.0


def call_agent(agent: Callable[[Dict[str, Any]], Any], case_input: Dict[str, Any],
               timeout: Optional[float]) -> Outcome:
    """Run the agent once on its own daemon thread: a crash is an ``error`` outcome, an agent
    still busy after ``timeout`` seconds a ``timeout`` one (its thread is left behind)."""
    box: Dict[str, Any] = {}

    def work() -> None:
        try:
            result = agent(json.loads(json.dumps(case_input)))
            if inspect.isawaitable(result):
                result = asyncio.run(_await(result))
            box["output"] = json.loads(json.dumps(result, default=str, allow_nan=False))
        except BaseException as exc:  # noqa: BLE001 - the agent's failure is evidence, not ours
            box["error"] = f"{type(exc).__name__}: {exc}"[:2000]

    started = time.perf_counter()
    thread = threading.Thread(target=work, name="bench-benchmark-agent", daemon=True)
    thread.start()
    thread.join(timeout)
    duration = (time.perf_counter() - started) * 1000
    if thread.is_alive():
        return Outcome("timeout", error=f"no answer within {timeout:g} s", duration_ms=duration)
    if "error" in box:
        return Outcome("error", error=box["error"], duration_ms=duration)
    return Outcome("ok", output=box.get("output"), duration_ms=duration)


async def _await(awaitable: Any) -> Any:
    return await awaitable


# ── the suite and the server ─────────────────────────────────────────────────────────────────

def _request(method: str, url: str, key: Optional[str], body: Any = None) -> Dict[str, Any]:
    """One JSON request; a non-2xx answer is a `BenchmarkError` quoting the server's error and
    the fields it names, a network failure a `ConnectionError`."""
    reply = _http.request(method, url, key, body, timeout=REQUEST_TIMEOUT)
    if not reply.ok:
        raise BenchmarkError(f"the server answered {reply.status}: {reply.error}"
                             + (f" ({reply.fields})" if reply.fields else ""))
    answer: Dict[str, Any] = reply.payload  # the benchmark API answers objects
    return answer


def load_suite(suite: str, server: str, suite_dir: Optional[Path] = None) -> Dict[str, Any]:
    """The suite document (``{"manifest", "cases"}``): from a local folder when there is one,
    else from the server."""
    folder = suite_dir or Path.cwd() / "benchmarks" / suite
    if (folder / "manifest.json").is_file():
        try:
            return {"manifest": json.loads((folder / "manifest.json").read_text(encoding="utf-8")),
                    "cases": json.loads((folder / "cases.json").read_text(encoding="utf-8"))}
        except (OSError, ValueError) as exc:
            raise BenchmarkError(f"cannot read the suite in {folder}: {exc}") from exc
    try:
        definition: Dict[str, Any] = _request("GET", f"{server}/api/benchmarks/{suite}", None)["definition"]
        return definition
    except ConnectionError as exc:
        raise BenchmarkError(str(exc)) from exc


def agent_input(document: Dict[str, Any], case: Dict[str, Any]) -> Dict[str, Any]:
    """What the agent is called with: the suite's instructions and the case's input (the
    server records the same as evidence)."""
    return {"instructions": document["manifest"]["instructions"], **case["input"]}


# ── running ──────────────────────────────────────────────────────────────────────────────────

class Progress:
    """A one-line progress bar on stderr (a line per step when stderr is not a terminal)."""

    WIDTH = 30

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total, self.done, self.stream = total, 0, stream
        self.tty = stream.isatty()

    def step(self, label: str, status: str) -> None:
        self.done += 1
        filled = self.WIDTH * self.done // self.total
        line = f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {self.done}/{self.total} {label} {status}"
        self.stream.write(("\r\x1b[2K" + line) if self.tty else line + "\n")
        if self.tty and self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


def run_attempts(agent: Callable[[Dict[str, Any]], Any], document: Dict[str, Any], repeats: int,
                 timeout: Optional[float], stream: TextIO) -> List[Dict[str, Any]]:
    cases = document["cases"]
    progress = Progress(len(cases) * repeats, stream)
    attempts = []
    for repeat in range(repeats):
        for case in cases:
            started_at = format_ts(time.time())
            outcome = call_agent(agent, agent_input(document, case), timeout)
            attempts.append({"case_id": case["id"], "repeat": repeat, "status": outcome.status,
                             "output": outcome.output, "output_hash": value_hash(outcome.output),
                             "error": outcome.error, "duration_ms": round(outcome.duration_ms, 3),
                             "started_at": started_at})
            progress.step(f"{case['id']} #{repeat + 1}", outcome.status)
    return attempts


def submit(server: str, key: str, suite: str, body: Dict[str, Any]) -> Dict[str, Any]:
    """POST the run; network failures are retried with the same nonce (the server stores a
    resubmitted run once)."""
    for attempt in range(1, SUBMIT_TRIES + 1):
        try:
            return _request("POST", f"{server}/api/benchmarks/{suite}/runs", key, body)
        except ConnectionError as exc:
            if attempt == SUBMIT_TRIES:
                raise BenchmarkError(f"{exc}; the run was not submitted") from exc
            time.sleep(attempt)
    raise AssertionError("unreachable")


def wait_for_grades(server: str, key: str, accepted: Dict[str, Any], wait: float,
                    stream: TextIO) -> Dict[str, Any]:
    """Look at the run until the server has graded it; its grading failing, or still going
    after ``wait`` seconds, is a `BenchmarkError` saying where to look."""
    run, pause = accepted, POLL_S[0]
    deadline = time.monotonic() + wait
    shown = None
    while run.get("status") in GRADING:
        progress = run.get("progress") or {}
        line = f"grading {progress.get('graded', 0)}/{progress.get('total', '?')} ({run['status']})"
        if line != shown:
            stream.write(line + "\n")
            stream.flush()
            shown = line
        if time.monotonic() + pause > deadline:
            raise BenchmarkError(f"run {run['run_id']} is still being graded after {wait:g} s; "
                                 f"see {server}{run['url']} or `bench benchmark show {run['run_id']}`")
        time.sleep(pause)
        pause = min(pause * 2, POLL_S[1])
        try:
            run = show_run(server, key, run["run_id"])
        except ConnectionError as exc:
            stream.write(f"{exc}; trying again\n")
    if run.get("status") == "failed":
        raise BenchmarkError(f"grading run {run['run_id']} failed: {run.get('error')}")
    return run


def run_benchmark(suite: str, agent_path: str, *, server: str, key: str, slug: str,
                  repeats: Optional[int], timeout: Optional[float],
                  suite_dir: Optional[Path] = None, stream: TextIO = sys.stderr,
                  wait: float = DEFAULT_WAIT_S) -> Dict[str, Any]:
    """Run, submit, wait for the grades and return the server's graded run."""
    agent = load_agent(agent_path)
    document = load_suite(suite, server, suite_dir)
    k = repeats or int(document["manifest"]["grading"]["repeats"])
    attempts = run_attempts(agent, document, k, timeout, stream)
    body = {"agent_slug": slug, "suite_hash": value_hash(document), "repeats": k,
            "attempts": attempts, "nonce": uuid.uuid4().hex,
            "sdk": {"name": SDK_NAME, "version": __version__}}
    return wait_for_grades(server, key, submit(server, key, suite, body), wait, stream)


# ── printing ─────────────────────────────────────────────────────────────────────────────────

def pct(value: Optional[float]) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def run_lines(run: Dict[str, Any], server: str) -> List[str]:
    s = run.get("summary") or run
    low, high = s.get("pass_rate_ci95") or (None, None)
    latency = s.get("latency_ms") or {}
    k = s.get("k")
    lines = [f"{run['suite']} · {run['agent']} · run {run['run_id']} "
             f"({run.get('label', 'benchmark evidence')}, judge {run['judge']})",
             f"  pass rate {pct(s.get('pass_rate'))} (95% CI {pct(low)}–{pct(high)}) over {s.get('attempts')} attempts",
             f"  pass^{k} {pct(s.get('pass_hat_k'))} · pass@{k} {pct(s.get('pass_at_k'))} of {s.get('cases')} cases",
             f"  latency p50 {latency.get('p50')} ms · p95 {latency.get('p95')} ms"
             + (f" · cost ${s['cost_usd_total']}" if s.get("cost_usd_total") is not None else "")]
    if s.get("errors") or s.get("timeouts"):
        lines.append(f"  {s.get('errors', 0)} attempts raised, {s.get('timeouts', 0)} timed out")
    for case in s.get("per_case") or []:
        lines.append(f"    {case['case_id']:<34} {case['passes']}/{case['attempts']} passed")
    lines.append(f"  {server}{run['url']}")
    return lines


def list_lines(server: str) -> List[str]:
    lines = []
    for suite in _request("GET", f"{server}/api/benchmarks", None)["suites"]:
        for v in suite["versions"]:
            lines.append(f"{v['suite']}: {v['cases']} cases, pass at score ≥ {v['pass_threshold']}"
                         f"{'' if v['published'] else ' (not published yet)'}")
            for r in v["top"]:
                lines.append(f"  {r['rank']}. {r['agent']} {pct(r['pass_rate'])} "
                             f"(pass^{r['k']} {pct(r['pass_hat_k'])}) run {r['run_id']}")
    return lines


def show_run(server: str, key: Optional[str], run_id: str) -> Dict[str, Any]:
    return _request("GET", f"{server}/api/benchmarks/runs/{run_id}", key)
