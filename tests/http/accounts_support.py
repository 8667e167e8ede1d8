"""A browser for the account tests: an httpx client that keeps cookies, reads CSRF tokens out
of pages as a browser's forms would carry them, and signs in locally with a one-time link, as
the machine's user does with the link `bench-server serve` prints."""

from __future__ import annotations

import dataclasses
import re
import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol

import httpx
from bench_core.accounts import signin_links
from bench_core.clock import FixedClock

if TYPE_CHECKING:
    from bench_core.ports.store import Store

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
LINK_TOKEN = re.compile(r'name="token" value="([^"]+)"')
SHOWN_KEY = re.compile(r"data-key>(bk[a]?_[A-Za-z0-9_-]+)<")


def new_login() -> str:
    return "u" + uuid.uuid4().hex[:12]


class Served(Protocol):
    """A running server: where it answers and its store (what its console's links are in)."""

    @property
    def url(self) -> str: ...
    @property
    def store(self) -> Store: ...


def signin_link(server: Served, *, base: str | None = None,
                age: timedelta = timedelta(0)) -> str:
    """A fresh one-time sign-in link to `server` (at `base`, its own URL by default), as
    `bench-server signin-link` prints it; `age`: issued that long ago."""
    then = FixedClock(server.store.clock.now() - age)
    token = signin_links.issue(dataclasses.replace(server.store, clock=then))
    return signin_links.link(base or server.url, token)


class Browser:
    def __init__(self, server: Served) -> None:
        self.server = server
        self.url = server.url
        self.http = httpx.Client(base_url=server.url, follow_redirects=False, timeout=30)

    def get(self, path: str, **params: Any) -> httpx.Response:
        return self.http.get(path, params=params or None)

    def csrf(self, path: str) -> str:
        """The token the page at `path` puts in its forms."""
        page = self.get(path)
        assert page.status_code == 200, (path, page.status_code)
        found = CSRF.search(page.text)
        assert found, f"no CSRF token on {path}"
        return found.group(1)

    def post(self, path: str, data: dict[str, str], *, token_from: str | None = None,
             headers: dict[str, str] | None = None) -> httpx.Response:
        """Submit a form as the page at `token_from` would (None: with the fields as given)."""
        fields = dict(data)
        if token_from is not None and "csrf" not in fields:
            fields["csrf"] = self.csrf(token_from)
        return self.http.post(path, data=fields, headers=headers)

    def signin_form(self, link: str | None = None) -> dict[str, str]:
        """Open a sign-in link (a fresh one unless given): the hidden fields of the form its
        page shows (the link's token, the CSRF token)."""
        page = self.http.get(link or signin_link(self.server, base=self.url))
        assert page.status_code == 200, page.text
        token, csrf = LINK_TOKEN.search(page.text), CSRF.search(page.text)
        assert token and csrf, "the link's page has no sign-in form"
        return {"token": token.group(1), "csrf": csrf.group(1)}

    def sign_in(self, login: str | None = None, *, link: str | None = None) -> str:
        """Sign in as `login` (a new one unless given) with a sign-in link; the login."""
        login = login or new_login()
        response = self.post("/signin/local", {**self.signin_form(link), "login": login},
                             token_from=None)
        assert response.status_code == 303, response.text
        return login

    def session_for(self, login: str) -> str:
        """Sign in as `login` and return the session cookie's value."""
        self.sign_in(login)
        cookie = self.session_cookie
        assert cookie is not None
        return cookie

    @property
    def session_cookie(self) -> str | None:
        return self.http.cookies.get("bench_session")

    def new_agent(self, slug: str, **fields: str) -> str:
        """Set up an agent from the dashboard; its key, as the setup page shows it once."""
        page = self.post("/dashboard/new", {"slug": slug, **fields}, token_from="/dashboard/new")
        assert page.status_code == 200, page.text
        found = SHOWN_KEY.search(page.text)
        assert found, "the setup page shows no key"
        return found.group(1)
