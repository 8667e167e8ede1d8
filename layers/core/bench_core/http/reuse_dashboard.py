"""The owner's dashboard page for authorized reuse, `/dashboard/agents/{slug}/reuse`: the
published capability card (and rotating its invocation secret), and the grants to call the
agent (add, replace, revoke). Every form is CSRF-checked and answered with a redirect, but for
the rotation, whose answer is the page showing the new secret once."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from ..accounts.agents import own_agent
from ..domain.errors import Invalid
from ..domain.models import Agent
from ..domain.privacy import Viewer
from ..ingest.wire import validation_detail
from ..reuse import capability, grants
from ..reuse.models import GrantRequest
from ..runtime.adapters import Services
from . import services_of
from .api import agent_ref
from .browser import NO_STORE, AccountRoute, account_session, check_csrf, form_fields
from .dashboard import _page as account_page

router = APIRouter(prefix="/dashboard", route_class=AccountRoute)


def _own_agent(services: Services, login: str, slug: str) -> Agent:
    return own_agent(services.store, agent_ref(login, slug))


def _reuse_page(services: Services, login: str, slug: str) -> dict[str, Any]:
    agent = _own_agent(services, login, slug)
    return {"agent": agent,
            "card": capability.capability_view(services.store, agent, Viewer(login)),
            "grants": grants.grants_of(services.store, agent.ref)}


@router.get("/agents/{slug}/reuse")
async def reuse_page(request: Request, slug: str,
                     services: Services = Depends(services_of)) -> Response:
    session = await account_session(request, services)
    context = await run_in_threadpool(_reuse_page, services, session.login, slug)
    return await account_page(request, services, session.login, "dashboard_reuse.html",
                              **context)


def _grant_from_form(services: Services, login: str, slug: str, fields: dict[str, str]) -> None:
    agent = _own_agent(services, login, slug)
    try:
        request = GrantRequest.model_validate(
            {name: fields.get(name) or None for name in GrantRequest.model_fields})
        request.refuse_expired(now := services.clock.now())
    except ValidationError as exc:
        raise Invalid("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
                                for e in validation_detail(exc))) from exc
    grants.put_grant(services.store, agent, request, now)


async def _checked_form(request: Request, services: Services) -> tuple[str, dict[str, str]]:
    """The signed-in owner and the fields of a form this site made."""
    session = await account_session(request, services)
    fields = await form_fields(request)
    await check_csrf(request, services, fields)
    return session.login, fields


def _back(login: str, slug: str) -> RedirectResponse:
    return RedirectResponse(f"/dashboard/agents/{agent_ref(login, slug).slug}/reuse",
                            status_code=303, headers=NO_STORE)


@router.post("/agents/{slug}/reuse/grants")
async def grant_form(request: Request, slug: str,
                     services: Services = Depends(services_of)) -> Response:
    login, fields = await _checked_form(request, services)
    await run_in_threadpool(_grant_from_form, services, login, slug, fields)
    return _back(login, slug)


def _rotated(services: Services, login: str, slug: str) -> dict[str, Any]:
    agent = _own_agent(services, login, slug)
    rotated = capability.rotate_secret(services.store, agent, services.clock.now())
    return {**_reuse_page(services, login, slug), "new_secret": rotated[capability.SECRET_FIELD]}


@router.post("/agents/{slug}/reuse/secret")
async def rotate_secret_form(request: Request, slug: str,
                             services: Services = Depends(services_of)) -> Response:
    """A new invocation secret, shown on this answer only (never stored by a cache)."""
    login, _ = await _checked_form(request, services)
    context = await run_in_threadpool(_rotated, services, login, slug)
    return await account_page(request, services, login, "dashboard_reuse.html", **context)


@router.post("/agents/{slug}/reuse/revoke")
async def revoke_form(request: Request, slug: str,
                      services: Services = Depends(services_of)) -> Response:
    login, fields = await _checked_form(request, services)
    await run_in_threadpool(grants.revoke_grant, services.store, agent_ref(login, slug),
                            fields.get("caller", "").lower())
    return _back(login, slug)
