"""Signing in and out: `/signin`, GitHub's OAuth round trip (`/auth/github`,
`/auth/github/callback`), the local sign-in of a single machine (`/signin/local`, reached only
by the one-time link its console shows: `accounts.signin_links`), `/logout`.

The OAuth `state` is bound to the browser that started the sign-in: it travels to GitHub in the
URL and stays behind in a signed, short-lived cookie; a callback whose state does not match the
cookie is refused, so nobody can finish a sign-in in someone else's browser. Every failure ends
on an error page that says what happened, with no session created.
"""

from __future__ import annotations

import secrets

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from ..accounts import github, live_grants, logins, sessions, signin_links, valid_account_login
from ..accounts import signed_tokens as signing
from ..runtime.adapters import Services
from . import public_base, services_of
from .browser import (
    NO_STORE,
    check_csrf,
    clear_cookie,
    csrf_for,
    form_fields,
    safe_next,
    set_cookie,
)
from .session_cookie import session_of
from .templating import PageRoute, error_page, page

router = APIRouter(route_class=PageRoute)

OAUTH_COOKIE = "bench_oauth"
OAUTH_PURPOSE = "oauth-state"
OAUTH_TTL_S = 600
CALLBACK = "/auth/github/callback"


def signed_in(request: Request, services: Services, login: str, target: str) -> Response:
    """Start a session for `login` and go on to `target`."""
    session, cookie = sessions.start(services.store, services.secrets.session_key(), login)
    response = RedirectResponse(target, status_code=303, headers=NO_STORE)
    set_cookie(response, request, services, sessions.COOKIE, cookie,
               session.max_age(services.clock.now()))
    return response


@router.get("/signin")
async def signin_page(request: Request, next: str | None = None,
                      services: Services = Depends(services_of)) -> Response:
    target = safe_next(next)
    session = await session_of(request, services)
    if session is not None and not session.sandbox:
        return RedirectResponse(target, status_code=303)
    settings = services.settings
    return page(request, "signin.html", next=target, github=settings.accounts.github_enabled,
                local=signin_links.enabled(settings), headers=NO_STORE)


@router.get(signin_links.PATH)
async def signin_link_page(request: Request, token: str = "", next: str | None = None,
                           services: Services = Depends(services_of)) -> Response:
    """Where a sign-in link lands: if it is fresh, a form to pick a name (which spends it). A
    spent link opened again by the browser it signed in (the console's link clicked twice)
    goes on to where it led rather than to an error."""
    signin_links.require_enabled(services.settings)
    try:
        await run_in_threadpool(signin_links.check, services.store, token)
    except signin_links.LinkSpent:
        session = await session_of(request, services)
        if session is None or session.sandbox:
            raise
        return RedirectResponse(safe_next(next), status_code=303)
    csrf = await csrf_for(request, services)
    response = page(request, "signin.html", next=safe_next(next), csrf=csrf.token,
                    token=token, github=False, local=True,
                    headers={**NO_STORE, "Referrer-Policy": "same-origin"})
    return csrf.apply(response, request, services)


@router.post(signin_links.PATH)
async def signin_local(request: Request, services: Services = Depends(services_of)) -> Response:
    signin_links.require_enabled(services.settings)
    fields = await form_fields(request)
    await check_csrf(request, services, fields)
    login = fields.get("login", "").strip().lower()
    if not valid_account_login(login):
        return error_page(request, 400, "Choose a name of letters, digits and single hyphens "
                                        "(up to 39), as on GitHub.")
    await run_in_threadpool(signin_links.redeem, services.store, fields.get("token", ""))
    await run_in_threadpool(logins.claim, services.store, login, None)
    return await run_in_threadpool(signed_in, request, services, login,
                                   safe_next(fields.get("next")))


@router.get("/auth/github")
def github_start(request: Request, next: str | None = None,
                 services: Services = Depends(services_of)) -> Response:
    accounts = services.settings.accounts
    if not accounts.github_enabled:
        return error_page(request, 404, "GitHub sign-in is not set up on this server.")
    state = secrets.token_urlsafe(24)
    cookie = signing.sign(services.secrets.session_key(), OAUTH_PURPOSE,
                          {"state": state, "next": safe_next(next)}, OAUTH_TTL_S,
                          now=services.clock.now())
    url = github.authorize_url(accounts, state, public_base(request, services) + CALLBACK)
    response = RedirectResponse(url, status_code=303, headers=NO_STORE)
    set_cookie(response, request, services, OAUTH_COOKIE, cookie, OAUTH_TTL_S, path="/auth")
    return response


@router.get(CALLBACK)
def github_callback(request: Request, code: str | None = None, state: str | None = None,
                    error: str | None = None,
                    services: Services = Depends(services_of)) -> Response:
    started = signing.unsign(services.secrets.session_key(), OAUTH_PURPOSE,
                             request.cookies.get(OAUTH_COOKIE, ""), now=services.clock.now())
    failure = _callback_problem(started, code, state, error)
    response: Response
    if failure is not None:
        response = error_page(request, 400, failure)
    else:
        assert isinstance(started, dict)  # _callback_problem checked it
        response = _finish_github(request, services, str(code), safe_next(started.get("next")))
    clear_cookie(response, request, services, OAUTH_COOKIE, path="/auth")
    return response


def _callback_problem(started: object, code: str | None, state: str | None,
                      error: str | None) -> str | None:
    """Why a callback cannot go on, in words for the person signing in; None if it can."""
    if error == "access_denied":
        return "Sign-in cancelled: GitHub said you did not authorize Bench. Nothing was changed."
    if error:
        return f"GitHub could not sign you in ({error[:100]})."
    if not isinstance(started, dict) or not state or not code:
        return "This sign-in link has expired or was not started in this browser. Try again."
    if not secrets.compare_digest(str(started.get("state")), state):
        return "This sign-in was not started in this browser (state mismatch). Try again."
    return None


def _finish_github(request: Request, services: Services, code: str, target: str) -> Response:
    accounts = services.settings.accounts
    redirect_uri = public_base(request, services) + CALLBACK
    try:
        user = github.signed_in_user(accounts, services.secrets.github_client_secret(), code,
                                     redirect_uri)
    except github.SignInFailed as exc:
        return error_page(request, 400, f"Sign-in failed: {exc.message}.")
    if not logins.claim(services.store, user.login, user.id):
        return error_page(request, 403, f"The name {user.login} belongs to another GitHub "
                                        "account on this Bench (it was renamed). Ask the admin.")
    return signed_in(request, services, user.login, target)


@router.post("/logout")
async def logout(request: Request, services: Services = Depends(services_of)) -> Response:
    fields = await form_fields(request)
    await check_csrf(request, services, fields)
    session = await session_of(request, services)
    if session is not None:
        await run_in_threadpool(sessions.end, services.store, session)
        await live_grants.signed_out(services.live, session)
    response = RedirectResponse("/", status_code=303, headers=NO_STORE)
    clear_cookie(response, request, services, sessions.COOKIE)
    return response
