"""The browser side of accounts in HTTP: the session cookie, CSRF checks, form bodies, and the
route class that sends a signed-out visitor of an account page to sign in.

Cookies are HttpOnly, SameSite=Lax (sent on a top-level navigation back from GitHub, never on
another site's POST or fetch), Secure when the site is served over https, and expire with the
session they carry.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote

from fastapi import Request, Response
from fastapi.responses import RedirectResponse
from starlette.concurrency import run_in_threadpool

from ..accounts import csrf
from ..accounts.sessions import Session
from ..domain.errors import BadRequest, Forbidden
from ..runtime.adapters import Services
from . import public_base
from .deps import read_body
from .session_cookie import session_of
from .templating import PageRoute

FORM_LIMIT = 16 * 1024
"""Account forms hold a few short fields; anything bigger is not one of ours."""
MAX_FIELDS = 32
NO_STORE = {"Cache-Control": "private, no-store"}


class SignInRequired(Exception):
    """An account page asked for without an account session (not a BenchError, so the page's
    error handling lets it through to `AccountRoute`)."""


async def account_session(request: Request, services: Services) -> Session:
    """The signed-in account (not a sandbox) of an account page; else off to sign in."""
    session = await session_of(request, services)
    if session is None or session.sandbox:
        raise SignInRequired
    return session


def secure_site(request: Request, services: Services) -> bool:
    return public_base(request, services).startswith("https://")


def set_cookie(response: Response, request: Request, services: Services, name: str, value: str,
               max_age: int, path: str = "/") -> None:
    response.set_cookie(name, value, max_age=max_age, path=path, httponly=True, samesite="lax",
                        secure=secure_site(request, services))


def clear_cookie(response: Response, request: Request, services: Services, name: str,
                 path: str = "/") -> None:
    response.delete_cookie(name, path=path, httponly=True, samesite="lax",
                           secure=secure_site(request, services))


async def form_fields(request: Request) -> dict[str, str]:
    """A small url-encoded form (what our pages and dashboard.js send), bounded and strict;
    an empty body is an empty form (a token in the header is all some requests carry)."""
    raw = await read_body(request, FORM_LIMIT)
    if not raw:
        return {}
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise BadRequest("send the form as application/x-www-form-urlencoded")
    try:
        pairs = parse_qsl(raw.decode(), keep_blank_values=True, max_num_fields=MAX_FIELDS)
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadRequest("malformed form") from exc
    return dict(pairs)


@dataclass
class Csrf:
    """The token a page puts in its forms, and the cookie to set if this browser had none."""

    token: str
    new_binding: str | None

    def apply(self, response: Response, request: Request, services: Services) -> Response:
        if self.new_binding is not None:
            set_cookie(response, request, services, csrf.ANON_COOKIE, self.new_binding,
                       max_age=7 * 24 * 3600)
        return response


async def csrf_for(request: Request, services: Services) -> Csrf:
    session = await session_of(request, services)
    binding = session.session_id if session else request.cookies.get(csrf.ANON_COOKIE)
    new = None if binding else csrf.new_binding()
    secret = await run_in_threadpool(services.secrets.session_key)
    return Csrf(csrf.token(secret, binding or new or ""), new)


async def check_csrf(request: Request, services: Services, fields: dict[str, str]) -> None:
    """Refuse a state-changing request that another site could have made the browser send."""
    if not csrf.same_origin(request.headers.get("origin"), public_base(request, services)):
        raise Forbidden("cross-site request refused")
    session = await session_of(request, services)
    binding = session.session_id if session else request.cookies.get(csrf.ANON_COOKIE)
    presented = fields.get(csrf.FIELD) or request.headers.get(csrf.HEADER)
    secret = await run_in_threadpool(services.secrets.session_key)
    if not csrf.valid(secret, binding, presented):
        raise Forbidden("this form has expired or did not come from Bench: reload the page and "
                        "try again")


def safe_next(target: str | None, default: str = "/dashboard") -> str:
    """Where to go after signing in: a path on this site only (never `//elsewhere`)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return default
    return target


class AccountRoute(PageRoute):
    """A page route whose signed-out visitors are sent to sign in and brought back after."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def run(request: Request) -> Response:
            try:
                return await handler(request)
            except SignInRequired:
                target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                return RedirectResponse(f"/signin?next={quote(target, safe='')}", status_code=303,
                                        headers=NO_STORE)

        return run
