"""The owner's dashboard (`/dashboard`): agents with live numbers, setting up a new agent
(install command, a key shown once, a first-task template; then waiting for the first event),
each agent's live feed and privacy settings, its annotation queue, and API keys.

Every page needs a signed-in account (sandbox sessions have none); every form is CSRF-checked
and answers with a redirect, except the two that show a new key, which is on that page only.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from ..accounts import api_keys, live_grants
from ..accounts.agents import NOT_YOURS, change_settings, create_with_key
from ..domain import privacy
from ..domain.errors import NotFound, TooManyAgents
from ..domain.models import SLUG_PATTERN, Agent, AgentSettingsPatch, KeyRecord, iso
from ..domain.privacy import IMPLICIT_AGENT, Viewer
from ..reads import dashboard as owner_reads
from ..reads.annotation_queue import annotation_queue
from ..runtime.adapters import Services
from . import public_base, services_of
from .analytics_section import analytics_context
from .api import agent_ref
from .browser import NO_STORE, AccountRoute, account_session, check_csrf, csrf_for, form_fields
from .templating import page

router = APIRouter(prefix="/dashboard", route_class=AccountRoute)

async def _page(request: Request, services: Services, login: str, template: str,
                status: int = 200, **context: Any) -> Response:
    """An account page: private, never stored by any cache, with a CSRF token for its forms."""
    token = await csrf_for(request, services)
    return page(request, template, viewer=Viewer(login), login=login, csrf=token.token,
                base=public_base(request, services), status=status, headers=NO_STORE, **context)


@router.get("")
async def home(request: Request, services: Services = Depends(services_of)) -> Response:
    session = await account_session(request, services)
    agents = await run_in_threadpool(owner_reads.owner_agents, services.store, session.login)
    return await _page(request, services, session.login, "dashboard.html", agents=agents,
                       channel=session.login)


# ---- a new agent -------------------------------------------------------------------------------


@router.get("/new")
async def new_agent_form(request: Request, services: Services = Depends(services_of)) -> Response:
    session = await account_session(request, services)
    form = {name: "on" for name in ("hide_inputs", "hide_outputs") if IMPLICIT_AGENT[name]}
    return await _page(request, services, session.login, "dashboard_new.html", form=form,
                       problem=None, slug_pattern=SLUG_PATTERN)


def _create(services: Services, login: str, fields: dict[str, str]) -> tuple[Agent | None, str]:
    """The new agent and its first key, or None and why not."""
    try:
        ref = agent_ref(login, fields.get("slug", "").strip())
        patch = AgentSettingsPatch(display_name=fields.get("display_name", "").strip() or None)
    except (NotFound, ValidationError):
        return None, "Name the agent with letters, digits, '.', '_' or '-' (up to 64)."
    agent = privacy.new_agent(
        login, ref.slug, iso(services.clock.now()), display_name=patch.display_name,
        visibility="private" if fields.get("visibility") == "private" else "public",
        hide_inputs="hide_inputs" in fields, hide_outputs="hide_outputs" in fields)
    try:
        raw = create_with_key(services.store, agent)
    except TooManyAgents as exc:
        return None, exc.message
    if raw is None:
        return None, f"You already have an agent called {ref.slug}."
    return agent, raw


@router.post("/new")
async def new_agent(request: Request, services: Services = Depends(services_of)) -> Response:
    session = await account_session(request, services)
    fields = await form_fields(request)
    await check_csrf(request, services, fields)
    agent, key_or_problem = await run_in_threadpool(_create, services, session.login, fields)
    if agent is None:
        return await _page(request, services, session.login, "dashboard_new.html", status=400,
                           form=fields, problem=key_or_problem, slug_pattern=SLUG_PATTERN)
    return await _page(request, services, session.login, "dashboard_setup.html", agent=agent,
                       key=key_or_problem, channel=f"{agent.login}/{agent.slug}")


# ---- one agent ---------------------------------------------------------------------------------


@router.get("/agents/{slug}")
async def agent_page(request: Request, slug: str, saved: bool = False,
                     services: Services = Depends(services_of)) -> Response:
    session = await account_session(request, services)
    ref = agent_ref(session.login, slug)
    context = await run_in_threadpool(owner_reads.owner_agent, services.store, ref)
    analytics = await run_in_threadpool(analytics_context, services.store, ref,
                                        Viewer(session.login), request.query_params,
                                        f"/dashboard/agents/{ref.slug}")
    return await _page(request, services, session.login, "dashboard_agent.html", saved=saved,
                       analytics=analytics, **context)


@router.post("/agents/{slug}/settings")
async def agent_settings(request: Request, slug: str,
                         services: Services = Depends(services_of)) -> Response:
    session = await account_session(request, services)
    fields = await form_fields(request)
    await check_csrf(request, services, fields)
    ref = agent_ref(session.login, slug)
    patch = AgentSettingsPatch(
        visibility="private" if fields.get("visibility") == "private" else "public",
        hide_inputs="hide_inputs" in fields, hide_outputs="hide_outputs" in fields,
        display_name=fields.get("display_name", "").strip()[:200] or None)
    updated = await run_in_threadpool(change_settings, services.store, ref,
                                      patch.model_dump(exclude_none=True))
    if updated is None:
        raise NotFound(NOT_YOURS)
    await live_grants.settings_changed(services.live, updated)
    return RedirectResponse(f"/dashboard/agents/{ref.slug}?saved=1", status_code=303,
                            headers=NO_STORE)


@router.get("/agents/{slug}/queue")
async def queue_page(request: Request, slug: str,
                     services: Services = Depends(services_of)) -> Response:
    """The annotation queue: the runs to give a verdict on next, one keystroke each
    (`queue.js`, through the feedback API with this page's CSRF token)."""
    session = await account_session(request, services)
    queue = await run_in_threadpool(annotation_queue, services.store,
                                    agent_ref(session.login, slug), Viewer(session.login))
    return await _page(request, services, session.login, "dashboard_queue.html", q=queue)


# ---- keys --------------------------------------------------------------------------------------


@router.get("/keys")
async def keys_page(request: Request, services: Services = Depends(services_of)) -> Response:
    session = await account_session(request, services)
    context = await run_in_threadpool(owner_reads.owner_keys, services.store, session.login)
    return await _page(request, services, session.login, "dashboard_keys.html", created=None,
                       **context)


def _new_key(services: Services, login: str, fields: dict[str, str]) -> tuple[str, KeyRecord]:
    scope = fields.get("scope", "owner")
    slug = None if scope == "owner" else agent_ref(login, scope).slug
    return api_keys.issue(services.store, login, slug,
                          name=fields.get("name", "").strip()[:100] or None)


@router.post("/keys")
async def create_key(request: Request, services: Services = Depends(services_of)) -> Response:
    session = await account_session(request, services)
    fields = await form_fields(request)
    await check_csrf(request, services, fields)
    raw, record = await run_in_threadpool(_new_key, services, session.login, fields)
    context = await run_in_threadpool(owner_reads.owner_keys, services.store, session.login)
    return await _page(request, services, session.login, "dashboard_keys.html",
                       created={"key": raw, "record": record}, **context)


@router.post("/keys/revoke")
async def revoke_key(request: Request, services: Services = Depends(services_of)) -> Response:
    session = await account_session(request, services)
    fields = await form_fields(request)
    await check_csrf(request, services, fields)
    revoked = await run_in_threadpool(api_keys.revoke_own, services.store, session.login,
                                      fields.get("key", ""))
    await live_grants.key_revoked(services.live, revoked)
    return RedirectResponse("/dashboard/keys", status_code=303, headers=NO_STORE)
