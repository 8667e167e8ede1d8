"""Authorized reuse over HTTP (bench_core.reuse):

- `router` (`/api`): the capability card (`PUT` by the owner, `GET` through the privacy gate,
  `POST .../capability/secret` rotates the invocation secret), the owner's grants
  (`GET`/`POST .../grants`, `DELETE .../grants/{caller}`) and the caller's usage (`GET /usage`);
- `invoke_router`: `POST /api/agents/{login}/{slug}/invoke`, apart because on AWS it runs in
  its own function (outbound network calls, a longer timeout, ingest's permissions).

The owner's page for the card and grants is `reuse_dashboard.py`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, BackgroundTasks, Depends, Query, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from ..accounts.agents import owned_by_key
from ..domain.errors import Invalid, NotFound
from ..domain.models import Agent, KeyRecord
from ..domain.privacy import Viewer
from ..ingest.wire import validation_detail
from ..reuse import capability, grants, invoke
from ..reuse.models import CapabilityCard, GrantRequest, InvokeRequest
from ..runtime import lambda_instrumentation
from ..runtime.adapters import Services
from . import error_response, services_of
from .api import agent_ref, load_visible
from .deps import current_viewer, read_body, require_key

router = APIRouter(prefix="/api")
invoke_router = APIRouter(prefix="/api")

USAGE_LIMIT = 100
INVOKE_BODY_SLACK = 1024
"""Room for the envelope (`{"input": ..., "skill": ...}`) around the largest input."""


def owned_agent(services: Services, key: KeyRecord, login: str, slug: str) -> Agent:
    """The agent if `key` is its owner's owner key; 404 for anyone else (names do not leak)."""
    return owned_by_key(services.store, key, agent_ref(login, slug),
                        "agent keys may only ingest and call; use an owner key (bk_...) here")


# ---- the capability card -----------------------------------------------------------------------


@router.put("/agents/{login}/{slug}/capability")
def put_capability(login: str, slug: str, card: CapabilityCard,
                   key: KeyRecord = Depends(require_key),
                   services: Services = Depends(services_of)) -> dict[str, Any]:
    agent = owned_agent(services, key, login, slug)
    return capability.publish(services.store, services.settings.reuse, agent, card,
                              services.clock.now())


@router.get("/agents/{login}/{slug}/capability")
def get_capability(login: str, slug: str, viewer: Viewer = Depends(current_viewer),
                   services: Services = Depends(services_of)) -> dict[str, Any]:
    agent = load_visible(services, login, slug, viewer)
    view = capability.capability_view(services.store, agent, viewer)
    if view is None:
        raise NotFound(f"{agent.login}/{agent.slug} has no published capability card")
    return view


@router.post("/agents/{login}/{slug}/capability/secret")
def rotate_secret(login: str, slug: str, key: KeyRecord = Depends(require_key),
                  services: Services = Depends(services_of)) -> dict[str, Any]:
    agent = owned_agent(services, key, login, slug)
    return capability.rotate_secret(services.store, agent, services.clock.now())


# ---- grants ------------------------------------------------------------------------------------


@router.get("/agents/{login}/{slug}/grants")
def list_grants(login: str, slug: str, key: KeyRecord = Depends(require_key),
                services: Services = Depends(services_of)) -> dict[str, Any]:
    agent = owned_agent(services, key, login, slug)
    return {"grants": [g.to_dict() for g in grants.grants_of(services.store, agent.ref)]}


@router.post("/agents/{login}/{slug}/grants", status_code=201)
def post_grant(login: str, slug: str, request: GrantRequest,
               key: KeyRecord = Depends(require_key),
               services: Services = Depends(services_of)) -> dict[str, Any]:
    now = services.clock.now()
    try:
        request.refuse_expired(now)
    except ValidationError as exc:
        raise Invalid("invalid request", [{**d, "loc": ["body", *d["loc"]]}
                                          for d in validation_detail(exc)]) from exc
    agent = owned_agent(services, key, login, slug)
    return grants.put_grant(services.store, agent, request, now).to_dict()


@router.delete("/agents/{login}/{slug}/grants/{caller}")
def delete_grant(login: str, slug: str, caller: str, key: KeyRecord = Depends(require_key),
                 services: Services = Depends(services_of)) -> dict[str, Any]:
    agent = owned_agent(services, key, login, slug)
    if not grants.revoke_grant(services.store, agent.ref, caller.lower()):
        raise NotFound(f"no grant to {caller}")
    return {"revoked": caller.lower()}


@router.get("/usage")
def list_usage(limit: int = Query(50, ge=1, le=USAGE_LIMIT), key: KeyRecord = Depends(require_key),
               services: Services = Depends(services_of)) -> dict[str, Any]:
    """The caller's own calls through Bench, newest first (and who the caller is); for an agent
    key, its agent's."""
    return {"login": key.login,
            "usage": [u.to_dict() for u in grants.usage_of(services.store, key, limit)]}


# ---- calling -----------------------------------------------------------------------------------


@invoke_router.post("/agents/{login}/{slug}/invoke")
async def post_invoke(login: str, slug: str, request: Request, background: BackgroundTasks,
                      key: KeyRecord = Depends(require_key),
                      services: Services = Depends(services_of)) -> JSONResponse:
    """The agent's answer, or 502/504; either way the recorded call goes to the agent's live
    feed after the response, as an ingested batch does."""
    raw = await read_body(request, services.settings.reuse.max_input_bytes + INVOKE_BODY_SLACK)
    try:
        body = InvokeRequest.model_validate_json(raw)
    except ValidationError as exc:
        raise Invalid("invalid call", [{**d, "loc": ["body", *d["loc"]]}
                                       for d in validation_detail(exc)]) from exc
    call = await run_in_threadpool(lambda: invoke.invoke(services, key, agent_ref(login, slug), body,
                                                         later=background.add_task))
    lambda_instrumentation.count("AgentCalls")
    response = (JSONResponse(call.answer) if call.error is None else
                error_response(call.error.status, call.error.message, call.error.detail,
                               call.error.headers))
    response.background = background
    return response
