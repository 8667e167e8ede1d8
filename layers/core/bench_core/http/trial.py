"""`/try`: Bench without signing up (bench_core.trial.sandbox).

`POST /try` starts a sandbox (rate-limited per client) and answers with its key, once, in the
snippet; the browser keeps a sandbox session for 24 hours. `POST /try/demo` sends the demo
agent's runs through the same ingest and live push as `POST /ingest`: one run per request when
the page's script drives it (so they arrive live), all of them from the plain form.
"""

from __future__ import annotations

from fastapi import APIRouter, BackgroundTasks, Depends, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from ..accounts import sessions
from ..domain.errors import Forbidden, TooManyRequests
from ..domain.field_limits import dumps
from ..domain.privacy import Viewer
from ..ingest.pipeline import Later, accept_batch
from ..runtime.adapters import Services
from ..trial import sandbox
from . import public_base, services_of
from .browser import NO_STORE, check_csrf, csrf_for, form_fields, set_cookie
from .deps import client_of
from .session_cookie import session_of
from .templating import PageRoute, error_page, page

router = APIRouter(route_class=PageRoute)


async def _page(request: Request, services: Services, login: str | None,
                key: str | None = None, status: int = 200) -> Response:
    token = await csrf_for(request, services)
    response = page(request, "try.html", viewer=Viewer(login) if login else None,
                    sandbox_login=login, slug=sandbox.SLUG, key=key, csrf=token.token,
                    base=public_base(request, services), steps=sandbox.DEMO_STEPS,
                    channel=f"{login}/{sandbox.SLUG}" if login else None,
                    status=status, headers=NO_STORE)
    return token.apply(response, request, services)


@router.get("/try")
async def try_page(request: Request, services: Services = Depends(services_of)) -> Response:
    session = await session_of(request, services)
    if session is not None and not session.sandbox:
        return RedirectResponse("/dashboard/new", status_code=303)
    return await _page(request, services, session.login if session else None)


def _start(services: Services, client: str) -> tuple[str, str, sessions.Session, str]:
    if not sandbox.allow_start(services.store, client, services.settings.accounts.sandbox_per_hour):
        raise TooManyRequests("too many sandboxes started from here in the last hour; try again "
                              "later, or sign in", headers={"Retry-After": "3600"})
    login, key = sandbox.create(services.store)
    session, cookie = sessions.start(services.store, services.secrets.session_key(), login,
                                     sandbox=True)
    return login, key, session, cookie


@router.post("/try")
async def start_sandbox(request: Request, services: Services = Depends(services_of)) -> Response:
    fields = await form_fields(request)
    await check_csrf(request, services, fields)
    client = client_of(request, services)
    try:
        login, key, session, cookie = await run_in_threadpool(_start, services, client)
    except TooManyRequests as exc:  # the error page, with the Retry-After PageRoute leaves out
        refused = error_page(request, exc.status, exc.message)
        refused.headers.update(exc.headers)
        return refused
    request.state.session = session  # the page below belongs to the new sandbox
    response = await _page(request, services, login, key=key)
    set_cookie(response, request, services, sessions.COOKIE, cookie,
               session.max_age(services.clock.now()))
    return response


def _demo(services: Services, login: str, steps: list[int], later: Later) -> None:
    """Ingest demo runs as the sandbox's own key, as `POST /ingest` would."""
    key = sandbox.demo_key(services.store, login)
    if key is None:
        raise Forbidden("this sandbox has expired: start a new one")
    for step in steps:
        accept_batch(services, key, dumps(sandbox.demo_batch(step, services.clock.now())).encode(),
                     later=later)


@router.post("/try/demo")
async def run_demo(request: Request, background: BackgroundTasks,
                   services: Services = Depends(services_of)) -> Response:
    fields = await form_fields(request)
    await check_csrf(request, services, fields)
    session = await session_of(request, services)
    if session is None or not session.sandbox:
        raise Forbidden("start a sandbox first")
    step = fields.get("step", "")
    steps = [int(step) % sandbox.DEMO_STEPS] if step.isdigit() else list(range(sandbox.DEMO_STEPS))
    await run_in_threadpool(_demo, services, session.login, steps, background.add_task)
    if step:
        return JSONResponse({"sent": len(steps)}, headers=NO_STORE)
    return RedirectResponse("/try", status_code=303, headers=NO_STORE)
