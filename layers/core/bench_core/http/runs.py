"""The run explorer: a run's page `/u/{login}/{slug}/runs/{task_id}` (tree, waterfall, span
details; no JavaScript needed), the runs list `/u/{login}/{slug}/runs`, and their JSON twins
under `/api/agents/{login}/{slug}/runs`. Everything is read through `reads.runs`, each read
taking its turn in a worker thread (`heavy_reads`)."""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from pydantic import BaseModel

from ..domain.errors import NotFound
from ..domain.models import AgentRef
from ..domain.privacy import Viewer
from ..reads import runs as reads
from ..runtime import collector
from ..runtime.adapters import Services
from . import public_base, services_of
from .api import agent_ref
from .deps import current_viewer
from .feedback import RunFeedback, annotation_form
from .heavy_reads import heavy_read
from .json_body import json_bytes
from .templating import PageRoute, page

router = APIRouter(route_class=PageRoute)
api_router = APIRouter(prefix="/api")


def _filters(status: str | None, name: str | None, q: str | None, min_ms: float | None,
             score_below: float | None) -> dict[str, Any]:
    return {"status": status or None, "name": name or None, "q": q or None, "min_ms": min_ms,
            "score_below": score_below}


MinMs = Query(None, ge=0, description="only runs that took at least this long (ms)")
ScoreBelow = Query(None, ge=0, le=1, description="only runs the judge scored below this")


@router.get("/u/{login}/{slug}/runs")
async def runs_page(request: Request, login: str, slug: str, status: str | None = None,
                    name: str | None = None, q: str | None = None,
                    min_ms: float | None = MinMs, score_below: float | None = ScoreBelow,
                    cursor: str | None = None, viewer: Viewer = Depends(current_viewer),
                    services: Services = Depends(services_of)) -> Response:
    return await heavy_read(services.settings, _runs_page, request, login, slug,
                            _filters(status, name, q, min_ms, score_below), cursor, viewer,
                            services)


def _runs_page(request: Request, login: str, slug: str, filters: dict[str, Any],
               cursor: str | None, viewer: Viewer, services: Services) -> Response:
    model = reads.runs_page(services.store, agent_ref(login, slug), viewer, filters, cursor)
    shown = {k: v for k, v in filters.items() if v is not None}
    return page(request, "runs.html", viewer=viewer, **model,
                next_query=urlencode({**shown, "cursor": model["next_cursor"]})
                if model["next_cursor"] else None, base=public_base(request, services))


class RunView(BaseModel):
    """Which part of a run its page draws: the selected `span`, the subtree at `focus`, the
    children of `expand` in full, the rows from `at` on within `within`'s subtree (where a
    collapsed row goes on), the window `after` a cursor (a run too big to read whole), only the
    spans whose name or visible content holds `q`; `part`
    answers only the rows (`rows`) or the selected span's details (`detail`), which the page's
    script puts in place without a page load."""

    span: str | None = None
    focus: str | None = None
    expand: str | None = None
    at: str | None = None
    within: str | None = None
    after: str | None = None
    q: str | None = None
    part: Literal["rows", "detail"] | None = None


PARTS = {"rows": "_span_rows.html", "detail": "_span_detail.html"}


@router.get("/u/{login}/{slug}/runs/{task_id}")
async def run_page(request: Request, login: str, slug: str, task_id: str,
                   view: RunView = Depends(), viewer: Viewer = Depends(current_viewer),
                   services: Services = Depends(services_of)) -> Response:
    return await heavy_read(services.settings, _run_page, request, login, slug, task_id, view,
                            viewer, services)


def _run_page(request: Request, login: str, slug: str, task_id: str, view: RunView,
              viewer: Viewer, services: Services) -> Response:
    with collector.paused():  # a thousand spans' tree, built and dropped by `_draw_run_page`
        return _draw_run_page(request, login, slug, task_id, view, viewer, services)


def _draw_run_page(request: Request, login: str, slug: str, task_id: str, view: RunView,
                   viewer: Viewer, services: Services) -> Response:
    model = reads.run_page(services.store, agent_ref(login, slug), viewer, task_id,
                           **view.model_dump(exclude={"part"}))
    if isinstance(model, reads.Elsewhere):
        target = (f"/u/{quote(login)}/{quote(slug)}/runs/{quote(model.run_id, safe='')}"
                  f"?span={quote(model.span_id, safe='')}#span-{quote(model.span_id, safe='')}")
        return RedirectResponse(target, status_code=302)
    shown = view.model_dump(exclude={"part"})

    def href(**changes: str | None) -> str:
        """This page's address with some of its view parameters changed (None drops one)."""
        query = {k: v for k, v in {**shown, **changes}.items() if v}
        return "?" + urlencode(query) if query else request.url.path

    if view.part == "detail" and model["selected"] is None:
        raise NotFound("span not found in this run")
    kept = urlencode({k: v for k, v in shown.items() if v and k != "span"})
    return page(request, PARTS[view.part] if view.part else "run.html", viewer=viewer, **model,
                base=public_base(request, services), href=href, keep="&" + kept if kept else "",
                view_params=shown, feedback_form=None if view.part else annotation_form(
                    request, services, viewer, model["agent"]["login"]))


@api_router.get("/agents/{login}/{slug}/runs")
async def runs_json(login: str, slug: str, status: str | None = None, name: str | None = None,
                    q: str | None = None, min_ms: float | None = MinMs,
                    score_below: float | None = ScoreBelow, cursor: str | None = None,
                    limit: int = Query(50, ge=1, le=200),
                    viewer: Viewer = Depends(current_viewer),
                    services: Services = Depends(services_of)) -> dict[str, Any]:
    """Runs newest first, filtered; `next_cursor` reads on (a page may hold fewer than
    `limit` runs where the store bounds what one page examines)."""
    return await heavy_read(services.settings, reads.runs_json, services.store,
                            agent_ref(login, slug), viewer,
                            _filters(status, name, q, min_ms, score_below), cursor, limit)


class Span(BaseModel):
    """One span of a run, as the privacy gate lets the viewer see it (hidden values read
    "[hidden by owner]"). In a run answered in start order (`span_order`), `depth` and the
    counts of what lies below a span are null: rebuild the tree from `parent_id`."""

    task_id: str
    parent_id: str | None
    depth: int | None
    name: str | None
    status: str
    start_offset_ms: float | None
    duration_ms: float | None
    cost_usd: float | None
    headline_cost_usd: float
    headline_cost_source: Literal["owner-reported", "provider evidence"] | None
    evidence: dict[str, Any] | None
    input: Any
    output: Any
    logs: list[dict[str, Any]]
    metadata: Any
    eval: dict[str, Any] | None
    started_at: str | None
    ended_at: str | None
    children: int | None
    descendants: int | None
    failed_below: int | None
    inputs_hidden: bool
    outputs_hidden: bool
    content_hidden: bool
    """Logs, metadata and span attributes show only what is known to be safe of them."""


class RunAnswer(BaseModel):
    """`GET /api/agents/{login}/{slug}/runs/{task_id}`."""

    run_id: str
    agent: str
    name: str | None
    status: str
    started_at: str | None
    ended_at: str | None
    duration_ms: float | None
    cost_usd: float | None
    """What the owner's code reported."""
    headline_cost_usd: float
    """The owner's reported cost, else the cost priced from provider evidence."""
    headline_cost_source: Literal["owner-reported", "provider evidence"] | None
    """Where `headline_cost_usd` comes from; null when nothing priced the run."""
    evidence: dict[str, Any] | None
    eval: dict[str, Any] | None
    unscored_because: str | None
    cluster: dict[str, Any] | None
    span_count: int
    failed_spans: int
    first_failed_span: str | None
    """The first failed span below the root, in start order."""
    depth: int | None
    """Null for a run answered in start order."""
    span_order: Literal["tree", "start"]
    """"tree": the run fits one answer, its spans in the order the tree is drawn (depth
    first, by start). "start": a bigger run (more than 1,000 spans, or more than 4 MB of
    them), by start time, page by page."""
    spans: list[Span]
    next_cursor: str | None
    feedback: RunFeedback
    """What people said of the run: scores and labels as the judge's score is shown, comments
    as content."""
    requested_span: str | None = None


@api_router.get("/agents/{login}/{slug}/runs/{task_id}", response_class=JSONResponse,
                responses={200: {"model": RunAnswer}})
async def run_json(login: str, slug: str, task_id: str, cursor: str | None = None,
                   viewer: Viewer = Depends(current_viewer),
                   services: Services = Depends(services_of)) -> Response:
    """One run and its spans, up to 1,000 and 4 MB of them per answer (Lambda returns at
    most 6 MB): a run that fits one answer in the order its tree is drawn, a bigger one in
    start order (`next_cursor` for the rest); a subtask's id answers its run with
    `requested_span` set. Encoded as it is read (the schema documents
    it; validating a thousand spans again would double the time)."""
    body = await heavy_read(services.settings, run_json_body, services, agent_ref(login, slug),
                            viewer, task_id, cursor)
    return Response(body, media_type="application/json")


def run_json_body(services: Services, ref: AgentRef, viewer: Viewer, task_id: str,
                  cursor: str | None) -> bytes:
    """The JSON twin encoded, read with the collector held off (`runtime.collector`): the
    answer is dropped as soon as it is encoded, before the collector resumes."""
    with collector.paused():
        return json_bytes(reads.run_answer(services.store, ref, viewer, task_id, cursor))
