"""Benchmarks over HTTP (SPEC section 8): submitting a run (`POST /api/benchmarks/{suite}/runs`),
the registry and suites as JSON (`api_router`), and the pages `/benchmarks`,
`/benchmarks/{suite}` and `/benchmarks/{suite}/runs/{id}` (`router`). The meaning is in
`bench_core.benchmarks`; what a viewer may see of a run is decided by `privacy.py`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from ..benchmarks import gate, read_models
from ..benchmarks.suites import load_suite
from ..domain.errors import BadRequest, Invalid
from ..domain.models import KeyRecord
from ..domain.privacy import Viewer
from ..ingest.wire import validation_detail
from ..render.http_caching import PUBLIC_60
from ..runtime.adapters import Services
from . import services_of, templating
from .deps import current_viewer, read_body, require_key
from .templating import PageRoute

if TYPE_CHECKING:
    from ..benchmarks.runs import RunIn
    from ..domain.benchmark_records import RunRecord

router = APIRouter(route_class=PageRoute)
api_router = APIRouter(prefix="/api/benchmarks")

TOP_ON_REGISTRY = 10
RANKING_ON_SUITE = 50


def parse_run(body: bytes) -> RunIn:
    # Here, not at import: submitting brings the graders and the LLM port (~40 ms of a cold
    # start) that the reading routes, and the pages, never use.
    from ..benchmarks.runs import RunIn

    try:
        return RunIn.model_validate_json(body)
    except ValidationError as exc:
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            raise BadRequest("body is not valid JSON", validation_detail(exc)) from exc
        raise Invalid("invalid benchmark run", validation_detail(exc)) from exc


# ---- JSON ---------------------------------------------------------------------------------------


@api_router.post("/{suite}/runs", status_code=202)
async def post_run(suite: str, request: Request, key: KeyRecord = Depends(require_key),
                   services: Services = Depends(services_of)) -> JSONResponse:
    """Owner keys for any agent of theirs, agent keys for their own agent (created if new).
    202: the run is stored `pending` and graded in the background (up to a judge call per
    answer: longer than a request may take); its `url` shows the progress until it is done.
    The same run sent again (its nonce) answers 200 with where it is now."""
    run = parse_run(await read_body(request, services.settings.limits.max_body_bytes))
    record = await run_in_threadpool(submitted_run, services, key, suite, run)
    return JSONResponse(read_models.accepted(record), status_code=202 if record.status in (
        "pending", "grading") else 200, headers={"Location": read_models.run_summary(record)["url"]})


def submitted_run(services: Services, key: KeyRecord, suite: str, run: RunIn) -> RunRecord:
    from ..benchmarks.runs import submit_run

    return submit_run(services, key, suite, run)


@api_router.get("")
def list_suites(top: int = Query(5, ge=0, le=50), services: Services = Depends(services_of)
                ) -> JSONResponse:
    """Public agents only and the same for everyone, so shared caches may keep it a minute."""
    return JSONResponse({"suites": read_models.suites_overview(services.store, top)},
                        headers={"Cache-Control": PUBLIC_60})


@api_router.get("/{suite}")
def get_suite(suite: str, services: Services = Depends(services_of)) -> JSONResponse:
    """The suite's definition as published (what `bench benchmark run` fetches), its hash and
    ranking."""
    detail = read_models.suite_detail(services.store, suite, RANKING_ON_SUITE)
    return JSONResponse({**detail, "definition": load_suite(suite).document},
                        headers={"Cache-Control": PUBLIC_60})


@api_router.get("/runs/{run_id}/check")
def check_run(run_id: str, against: str | None = Query(None, min_length=1, max_length=64),
              min_cases: int = Query(gate.MIN_CASES, ge=gate.MIN_CASES, le=100_000),
              viewer: Viewer = Depends(current_viewer),
              services: Services = Depends(services_of)) -> dict[str, Any]:
    """A run against the agent's run before it (or `against`), as `bench check
    --benchmark-run` gates on it (`benchmarks/gate.py`)."""
    return gate.check_run(services.store, run_id, against, min_cases, viewer)


@api_router.get("/runs/{run_id}")
def get_run_by_id(run_id: str, viewer: Viewer = Depends(current_viewer),
                  services: Services = Depends(services_of)) -> dict[str, Any]:
    """A run by id alone (`bench benchmark show RUN_ID`)."""
    run, agent = read_models.visible_run(services.store, None, run_id, viewer)
    return read_models.run_detail(run, agent, viewer)


@api_router.get("/{suite}/runs/{run_id}")
def get_run(suite: str, run_id: str, viewer: Viewer = Depends(current_viewer),
            services: Services = Depends(services_of)) -> dict[str, Any]:
    run, agent = read_models.visible_run(services.store, suite, run_id, viewer)
    return read_models.run_detail(run, agent, viewer)


# ---- pages --------------------------------------------------------------------------------------


@router.get("/benchmarks")
def registry_page(request: Request, viewer: Viewer = Depends(current_viewer),
                  services: Services = Depends(services_of)) -> Response:
    return templating.page(request, "benchmarks.html", viewer=viewer,
                       suites=read_models.suites_overview(services.store, TOP_ON_REGISTRY))


@router.get("/benchmarks/{suite}")
def suite_page(request: Request, suite: str, viewer: Viewer = Depends(current_viewer),
               services: Services = Depends(services_of)) -> Response:
    return templating.page(request, "benchmark_suite.html", viewer=viewer,
                       s=read_models.suite_detail(services.store, suite, RANKING_ON_SUITE),
                       cases=load_suite(suite).suite.cases)


@router.get("/benchmarks/{suite}/runs/{run_id}")
def run_page(request: Request, suite: str, run_id: str, viewer: Viewer = Depends(current_viewer),
             services: Services = Depends(services_of)) -> Response:
    run, agent = read_models.visible_run(services.store, suite, run_id, viewer)
    return templating.page(request, "benchmark_run.html", viewer=viewer,
                       r=read_models.run_detail(run, agent, viewer),
                       private=not agent.is_public)
