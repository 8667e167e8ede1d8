"""A browser for the account tests: an httpx client that keeps cookies, reads CSRF tokens out
of pages as a browser's forms would carry them, and signs in locally."""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
SHOWN_KEY = re.compile(r"data-key>(bk[a]?_[A-Za-z0-9_-]+)<")


def new_login() -> str:
    return "u" + uuid.uuid4().hex[:12]


class Browser:
    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(base_url=url, follow_redirects=False, timeout=30)

    def get(self, path: str, **params: Any) -> httpx.Response:
        return self.http.get(path, params=params or None)

    def csrf(self, path: str = "/signin") -> str:
        """The token the page at `path` puts in its forms."""
        page = self.get(path)
        assert page.status_code == 200, (path, page.status_code)
        found = CSRF.search(page.text)
        assert found, f"no CSRF token on {path}"
        return found.group(1)

    def post(self, path: str, data: dict[str, str], *, token_from: str | None = "/signin",
             headers: dict[str, str] | None = None) -> httpx.Response:
        """Submit a form as the page at `token_from` would (None: without a token)."""
        fields = dict(data)
        if token_from is not None and "csrf" not in fields:
            fields["csrf"] = self.csrf(token_from)
        return self.http.post(path, data=fields, headers=headers)

    def sign_in(self, login: str | None = None) -> str:
        login = login or new_login()
        response = self.post("/signin/local", {"login": login, "next": "/dashboard"})
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
