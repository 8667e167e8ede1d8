"""An agent's regression alerts on its owner's dashboard, `/dashboard/agents/{slug}/alerts`
(`alerts/owner.py`): the list; acknowledging or closing an open alert; where alerts go. Each
form is CSRF-checked and answered with a redirect. The JSON twin is `http/alerts.py`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from ..accounts.agents import own_agent
from ..alerts import owner
from ..domain.alerts import AlertSettings, RuleSetting
from ..domain.errors import Invalid
from ..domain.models import iso
from ..domain.monitors import Metric
from ..ingest.wire import validation_detail
from ..runtime.adapters import Services
from . import public_base, services_of
from .api import agent_ref
from .browser import NO_STORE, AccountRoute, account_session, check_csrf, form_fields
from .dashboard import _page as account_page

router = APIRouter(prefix="/dashboard", route_class=AccountRoute)
METRICS = [(m.value, title) for m, title in
           ((Metric.SUCCESS, "Success rate"), (Metric.SCORE, "Judge score"),
            (Metric.COST, "Cost per successful run"), (Metric.P95, "p95 latency"),
            (Metric.CLUSTER, "New or growing failure clusters (share of runs)"))]


def _alerts_page(services: Services, login: str, slug: str, base: str) -> dict[str, Any]:
    agent = own_agent(services.store, agent_ref(login, slug))
    return {"agent": agent, "metrics": METRICS, **owner.owner_alerts(services, agent, base)}


@router.get("/agents/{slug}/alerts")
async def alerts_page(request: Request, slug: str, saved: bool = False,
                      services: Services = Depends(services_of)) -> Response:
    session = await account_session(request, services)
    context = await run_in_threadpool(_alerts_page, services, session.login, slug,
                                      public_base(request, services))
    return await account_page(request, services, session.login, "dashboard_alerts.html",
                              saved=saved, **context)


async def _checked_form(request: Request, services: Services) -> tuple[str, dict[str, str]]:
    session = await account_session(request, services)
    fields = await form_fields(request)
    await check_csrf(request, services, fields)
    return session.login, fields


def _back(login: str, slug: str, saved: bool = False) -> RedirectResponse:
    return RedirectResponse(f"/dashboard/agents/{agent_ref(login, slug).slug}/alerts"
                            + ("?saved=1" if saved else ""), status_code=303, headers=NO_STORE)


@router.post("/agents/{slug}/alerts/{action}")
async def alert_action(request: Request, slug: str, action: str,
                       services: Services = Depends(services_of)) -> Response:
    """`acknowledge` or `resolve` the open alert the form names (`key`)."""
    login, fields = await _checked_form(request, services)

    def act() -> None:
        agent = own_agent(services.store, agent_ref(login, slug))
        owner.set_state(services.store, agent.ref, fields.get("key", ""), action,
                        iso(services.clock.now()))

    await run_in_threadpool(act)
    return _back(login, slug)


def settings_from_form(fields: dict[str, str]) -> AlertSettings:
    """The settings form's fields as `AlertSettings`; 422 naming what is wrong."""
    def number(name: str) -> float | None:
        raw = fields.get(name, "").strip()
        if not raw:
            return None
        try:
            return float(raw)
        except ValueError as exc:
            raise Invalid(f"{name} must be a number") from exc

    try:
        rules = tuple(RuleSetting.model_validate({
            "metric": value, "mode": fields.get(f"mode_{value}") or "significant",
            "min_effect": number(f"min_effect_{value}"),
            "threshold": number(f"threshold_{value}")}) for value, _ in METRICS)
        return AlertSettings(webhook_url=fields.get("webhook_url", "").strip() or None,
                             slack_webhook_url=fields.get("slack_webhook_url", "").strip() or None,
                             rules=rules)
    except ValidationError as exc:
        raise Invalid("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
                                for e in validation_detail(exc))) from exc


@router.post("/agents/{slug}/alert-settings")
async def alert_settings(request: Request, slug: str,
                         services: Services = Depends(services_of)) -> Response:
    login, fields = await _checked_form(request, services)

    def save() -> None:
        agent = own_agent(services.store, agent_ref(login, slug))
        owner.save_settings(services.store, agent.ref, settings_from_form(fields))

    await run_in_threadpool(save)
    return _back(login, slug, saved=True)
