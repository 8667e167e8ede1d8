"""The run explorer: a run's page `/u/{login}/{slug}/runs/{task_id}` (tree, waterfall, span
details; no JavaScript needed), the runs list `/u/{login}/{slug}/runs`, and their JSON twins
under `/api/agents/{login}/{slug}/runs`. Everything is read through `reads.runs`, each read
taking its turn in a worker thread (`heavy_reads`)."""

from __future__ import annotations

import uuid
from typing import Any, Literal
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Depends, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from ..domain.errors import NotFound
from ..domain.models import AgentRef
from ..domain.privacy import Viewer
from ..ports.files import LINK_S, FileDrop
from ..reads import export, export_jobs, run_diff
from ..reads import runs as reads
from ..reads.export_jobs import ExportJob, file_name
from ..reads.run_filters import query_filters
from ..render.json_body import json_bytes
from ..runtime import collector
from ..runtime.adapters import Services
from . import public_base, services_of
from .api import agent_ref
from .deps import current_viewer
from .feedback import RunFeedback, annotation_form
from .heavy_reads import TurnStream, heavy_read, take_turn
from .templating import PageRoute, page

router = APIRouter(route_class=PageRoute)
api_router = APIRouter(prefix="/api")


def _filters(request: Request) -> dict[str, Any]:
    """The list's filters the query string sets (`reads.run_filters`: parsed and checked
    there, a bad value a 400 naming its parameter)."""
    return query_filters(request.query_params.get, request.query_params.getlist)


@router.get("/u/{login}/{slug}/runs")
async def runs_page(request: Request, login: str, slug: str, cursor: str | None = None,
                    viewer: Viewer = Depends(current_viewer),
                    services: Services = Depends(services_of)) -> Response:
    """The runs list, filtered and sorted by its query string (`reads.run_filters.FILTERS`)."""
    return await heavy_read(services.settings, _runs_page, request, login, slug,
                            _filters(request), cursor, viewer, services)


def _runs_page(request: Request, login: str, slug: str, filters: dict[str, Any],
               cursor: str | None, viewer: Viewer, services: Services) -> Response:
    model = reads.runs_page(services.store, agent_ref(login, slug), viewer, filters, cursor)
    return page(request, "runs.html", viewer=viewer, **model,
                next_query=urlencode({**filters, "cursor": model["next_cursor"]}, doseq=True)
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
                    request, services, viewer, model["agent"]["login"], model["agent"]["slug"]))


@api_router.get("/agents/{login}/{slug}/runs")
async def runs_json(request: Request, login: str, slug: str, cursor: str | None = None,
                    limit: int = Query(50, ge=1, le=200),
                    viewer: Viewer = Depends(current_viewer),
                    services: Services = Depends(services_of)) -> dict[str, Any]:
    """Runs filtered and sorted by the page's own parameters (`reads.run_filters.FILTERS`:
    status, name, q, model, provider, tag, meta=key=value (repeatable), since, until,
    min_/max_cost, min_/max_tokens, min_/max_ms, min_/max_score, score_below, sort, order);
    `next_cursor` reads on (a page may hold fewer than `limit` runs where the store bounds
    what one page examines: `searched` then says how far it looked)."""
    return await heavy_read(services.settings, reads.runs_json, services.store,
                            agent_ref(login, slug), viewer, _filters(request), cursor, limit)


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
    version: str | None = None
    """The agent's version the run was recorded with (`domain.versions`); null for none."""
    session_id: str | None = None
    """The session the run is a turn of (`domain.sessions`); null for none."""
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


@router.get("/u/{login}/{slug}/runs/{a}/vs/{b}")
async def run_diff_page(request: Request, login: str, slug: str, a: str, b: str,
                        viewer: Viewer = Depends(current_viewer),
                        services: Services = Depends(services_of)) -> Response:
    """Run `a` and run `b` side by side (`reads.run_diff`)."""
    model = await heavy_read(services.settings, run_diff.run_diff, services.store,
                             agent_ref(login, slug), viewer, a, b)
    return page(request, "run_diff.html", viewer=viewer, **model)


@router.get("/u/{login}/{slug}/runs/{task_id}/vs-previous")
async def previous_run_diff(request: Request, login: str, slug: str, task_id: str,
                            viewer: Viewer = Depends(current_viewer),
                            services: Services = Depends(services_of)) -> Response:
    """The run page's "compare with the previous run": the diff of the newest earlier run
    of the same name (A) with this one (B)."""
    earlier = await heavy_read(services.settings, run_diff.previous_run, services.store,
                               agent_ref(login, slug), viewer, task_id)
    return RedirectResponse(f"/u/{quote(login)}/{quote(slug)}/runs/{quote(earlier, safe='')}"
                            f"/vs/{quote(task_id, safe='')}", status_code=302)


@api_router.get("/agents/{login}/{slug}/runs/{a}/vs/{b}")
async def run_diff_json(login: str, slug: str, a: str, b: str,
                        viewer: Viewer = Depends(current_viewer),
                        services: Services = Depends(services_of)) -> dict[str, Any]:
    """The diff of run `a` and run `b`: both headers, B minus A of their numbers, and every
    span of each (their first `limit` in start order; `cut` when a run has more) matched by
    its path of names, in drawing order, with what changed."""
    model = await heavy_read(services.settings, run_diff.run_diff, services.store,
                             agent_ref(login, slug), viewer, a, b)
    return {k: v for k, v in model.items() if k != "agent"}


@api_router.get("/agents/{login}/{slug}/runs.{form}", response_class=StreamingResponse,
                responses={200: {"content": {t: {} for t in export.MEDIA_TYPES.values()}}})
async def runs_export(request: Request, login: str, slug: str, form: export.Format,
                      spans: bool = Query(False, description="each run's spans after it"),
                      limit: int = Query(export.MAX_RUNS, ge=1, le=export.MAX_RUNS),
                      viewer: Viewer = Depends(current_viewer),
                      services: Services = Depends(services_of)) -> Response:
    """The runs list with its filters and order (`reads.run_filters.FILTERS`, at most `limit`
    runs), as JSON Lines
    (`jsonl`: a record a line, `{"record": "run" | "span" | "end"}`) or CSV (`csv`: a row
    a run or span), streamed as it is read, through the privacy gate; `spans=1` adds every
    span of each run after it. On AWS an export bigger than one answer is written to the
    export bucket and answered 303 with a link to it (`url`) that lasts a few minutes, and
    one that outlasts an answer (`reads/export_jobs.py`) is answered 202 with where to look
    for it (`poll`, `Location`), which answers 303 with the link once it is made."""
    ref = agent_ref(login, slug)
    job = ExportJob(ref.path, form, _filters(request), spans, limit, viewer.login,
                    viewer.agent_slug)
    media_type = export.MEDIA_TYPES[form]
    headers = {"Content-Disposition": f'attachment; filename="{file_name(ref, form)}"',
               "Cache-Control": "private, no-store"}
    drop = services.files
    if drop is not None:  # AWS: Lambda returns an answer whole, and at most 6 MB of it
        made = await heavy_read(services.settings, _dropped, services, drop, job)
        if made is None:
            where = export_jobs.poll_path(job)
            return JSONResponse({"status": "preparing", "poll": where,
                                 "retry_after_s": export_jobs.POLL_AFTER_S}, status_code=202,
                                headers={"Location": where, "Cache-Control": "no-store",
                                         "Retry-After": str(export_jobs.POLL_AFTER_S)})
        if isinstance(made, str):
            return _link(made)
        return Response(made, media_type=media_type, headers=headers)
    release = await take_turn(services.settings)
    try:
        records = await run_in_threadpool(export.export, services.store, ref, viewer,
                                          job.filters, spans=spans, limit=limit)
    except BaseException:
        release()
        raise
    return TurnStream(export.encoded(records, form), release, media_type=media_type,
                      headers=headers)


def _link(url: str) -> JSONResponse:
    return JSONResponse({"url": url, "expires_in_s": LINK_S}, status_code=303,
                        headers={"Location": url, "Cache-Control": "no-store"})


def _dropped(services: Services, drop: FileDrop, job: ExportJob) -> bytes | str | None:
    """The export whole, or a link to it on the drop; None once it is handed off."""
    records = export.export(services.store, job.ref, job.viewer, job.filters, spans=job.spans,
                            limit=job.limit)
    chunks = export.encoded(records, job.form)
    name, media_type = f"{uuid.uuid4().hex}/{file_name(job.ref, job.form)}", export.MEDIA_TYPES[job.form]
    hand_off = services.exports
    if hand_off is None:
        return export.delivered(chunks, drop, name, media_type)
    try:
        return export.delivered(export_jobs.within(chunks, export_jobs.INLINE_S), drop, name,
                                media_type)
    except export_jobs.Overrun:
        export_jobs.mark_started(drop, job)
        hand_off.hand_off(job.payload())
        return None


@api_router.get("/agents/{login}/{slug}/exports/{job_id}.{form}")
async def export_job(login: str, slug: str, form: export.Format,
                     job_id: str = PathParam(pattern="^[0-9a-f]{32}$"),
                     viewer: Viewer = Depends(current_viewer),
                     services: Services = Depends(services_of)) -> Response:
    """An export handed off (`runs_export`'s 202): 303 to a link to it once it is made, 202
    while it is being made, 500 if it failed; 404 for no such export of this viewer's."""
    drop = services.files
    found = None if drop is None else await run_in_threadpool(
        export_jobs.job_state, drop, viewer, agent_ref(login, slug), job_id, form)
    if found is None:
        raise NotFound("no such export: it was never asked for by you, or it is a day old")
    state, link = found
    if link is not None:
        return _link(link)
    if state == "failed":
        return JSONResponse({"error": "the export failed", "detail": ["ask for it again"]},
                            status_code=500, headers={"Cache-Control": "no-store"})
    return JSONResponse({"status": "preparing", "retry_after_s": export_jobs.POLL_AFTER_S},
                        status_code=202, headers={"Retry-After": str(export_jobs.POLL_AFTER_S),
                                                  "Cache-Control": "no-store"})
