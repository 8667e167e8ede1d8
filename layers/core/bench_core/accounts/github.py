"""GitHub sign-in: the OAuth authorization code flow (web application flow).

1. `authorize_url` sends the browser to GitHub with a random `state`, which the caller also
   binds to the browser (a signed cookie), so a callback for someone else's sign-in is refused;
2. GitHub redirects back with `code` and `state` (or `error=access_denied`);
3. `exchange_code` trades the code for an access token at GitHub's token endpoint, and
   `fetch_user` reads who it belongs to. The token is used once and never stored.

The base URLs come from settings so tests (and GitHub Enterprise) can point them elsewhere.
Every failure is a `SignInFailed` whose message says what went wrong, in words a user can act on.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

import httpx

from ..domain.errors import BenchError
from ..settings import AccountSettings
from . import valid_account_login

TIMEOUT_S = 10.0


class SignInFailed(BenchError):
    status = 400


@dataclass(frozen=True)
class GitHubUser:
    id: int
    login: str
    """Lowercased: logins are case-insensitive on GitHub, and Bench's paths are lowercase."""


def authorize_url(settings: AccountSettings, state: str, redirect_uri: str) -> str:
    query = urlencode({"client_id": settings.github_client_id, "redirect_uri": redirect_uri,
                       "state": state, "allow_signup": "true"})
    return f"{settings.github_url.rstrip('/')}/login/oauth/authorize?{query}"


def exchange_code(settings: AccountSettings, client_secret: str, code: str, redirect_uri: str,
                  client: httpx.Client) -> str:
    """The access token for `code`. GitHub answers a refused code with 200 and an `error`."""
    try:
        response = client.post(
            f"{settings.github_url.rstrip('/')}/login/oauth/access_token",
            data={"client_id": settings.github_client_id, "client_secret": client_secret,
                  "code": code, "redirect_uri": redirect_uri},
            headers={"Accept": "application/json"}, timeout=TIMEOUT_S)
    except httpx.HTTPError as exc:
        raise SignInFailed(f"could not reach GitHub to finish signing in ({type(exc).__name__})") \
            from exc
    body = _json(response)
    if response.status_code != 200 or "error" in body or not isinstance(
            body.get("access_token"), str):
        reason = body.get("error_description") or body.get("error") or f"HTTP {response.status_code}"
        raise SignInFailed(f"GitHub did not accept the sign-in code: {reason}")
    return str(body["access_token"])


def fetch_user(settings: AccountSettings, token: str, client: httpx.Client) -> GitHubUser:
    try:
        response = client.get(f"{settings.github_api_url.rstrip('/')}/user",
                              headers={"Authorization": f"Bearer {token}",
                                       "Accept": "application/vnd.github+json"},
                              timeout=TIMEOUT_S)
    except httpx.HTTPError as exc:
        raise SignInFailed(f"could not reach GitHub to read your account ({type(exc).__name__})") \
            from exc
    body = _json(response)
    if response.status_code != 200:
        raise SignInFailed(f"GitHub refused to say who signed in (HTTP {response.status_code})")
    login, user_id = str(body.get("login") or "").lower(), body.get("id")
    if not valid_account_login(login) or not isinstance(user_id, int) or isinstance(user_id, bool):
        raise SignInFailed("GitHub answered with an account Bench cannot use")
    return GitHubUser(user_id, login)


def signed_in_user(settings: AccountSettings, client_secret: str, code: str,
                   redirect_uri: str) -> GitHubUser:
    """The account behind a callback's `code`: the code for a token, the token for the user,
    over one connection; `SignInFailed` saying why not."""
    with httpx.Client() as client:
        token = exchange_code(settings, client_secret, code, redirect_uri, client)
        return fetch_user(settings, token, client)


def _json(response: httpx.Response) -> dict[str, object]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
