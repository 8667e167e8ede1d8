"""Signing in and out over real HTTP: GitHub's OAuth code flow against a loopback stand-in for
GitHub, the local sign-in (by its one-time link), session cookies (attributes, tampering, expiry, logout), CSRF."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from bench_core.accounts import signed_tokens
from bench_core.settings import AccountSettings

from tests.conftest import RunningServer, serving
from tests.http.accounts_support import Browser, new_login, signin_link

SECRET = "s" * 48


# ---- a stand-in for GitHub ----------------------------------------------------------------------


@dataclass
class FakeGitHub:
    """GitHub's token and user endpoints: code `good-<login>-<id>` yields a token for that
    account, any other code is refused as GitHub refuses it (200 with an `error`)."""

    url: str = ""
    token_requests: list[dict[str, list[str]]] = field(default_factory=list)
    broken_user_endpoint: bool = False

    def handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def reply(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length", 0))
                form = parse_qs(self.rfile.read(length).decode())
                fake.token_requests.append(form)
                code = form.get("code", [""])[0]
                if self.path != "/login/oauth/access_token" or not code.startswith("good-"):
                    self.reply(200, {"error": "bad_verification_code",
                                     "error_description": "The code passed is incorrect or expired."})
                    return
                self.reply(200, {"access_token": "tok-" + code[len("good-"):],
                                 "token_type": "bearer", "scope": ""})

            def do_GET(self) -> None:  # noqa: N802
                token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                if self.path != "/user" or not token.startswith("tok-") or fake.broken_user_endpoint:
                    self.reply(401, {"message": "Bad credentials"})
                    return
                login, _, user_id = token[len("tok-"):].rpartition("-")
                self.reply(200, {"login": login, "id": int(user_id), "name": "Someone"})

        return Handler


@pytest.fixture(scope="module")
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), fake.handler())
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield fake
    server.shutdown()


@pytest.fixture(scope="module")
def github_server(github: FakeGitHub, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[RunningServer]:
    """Bench with GitHub sign-in configured (and therefore no local sign-in)."""
    accounts = AccountSettings(session_secret=SECRET, github_client_id="client-123",
                               github_client_secret="client-secret", github_url=github.url,
                               github_api_url=github.url)
    with serving(tmp_path_factory.mktemp("gh"), store="memory", accounts=accounts) as running:
        yield running


def begin(browser: Browser, next_path: str = "/dashboard") -> str:
    """Start a GitHub sign-in; the state Bench sent to GitHub (and bound to the browser)."""
    start = browser.get("/auth/github", next=next_path)
    assert start.status_code == 303
    cookie = set_cookies(start)["bench_oauth"]
    assert "HttpOnly" in cookie and "samesite=lax" in cookie.lower() and "Path=/auth" in cookie
    target = urlsplit(start.headers["location"])
    query = parse_qs(target.query)
    assert target.path == "/login/oauth/authorize"
    assert query["client_id"] == ["client-123"]
    assert query["redirect_uri"] == [browser.url + "/auth/github/callback"]
    return query["state"][0]


def set_cookies(response: httpx.Response) -> dict[str, str]:
    return {h.split("=", 1)[0]: h for h in response.headers.get_list("set-cookie")}


# ---- GitHub ---------------------------------------------------------------------------------------


def test_github_sign_in_creates_a_session_and_returns_where_it_started(
        github: FakeGitHub, github_server: RunningServer) -> None:
    browser = Browser(github_server)
    login = new_login()
    state = begin(browser, "/dashboard/keys")
    done = browser.get("/auth/github/callback", code=f"good-{login}-4242", state=state)
    assert done.status_code == 303 and done.headers["location"] == "/dashboard/keys"
    cookie = set_cookies(done)["bench_session"]
    assert "HttpOnly" in cookie and "samesite=lax" in cookie.lower() and "Max-Age=" in cookie
    assert "Secure" not in cookie, "served over http: a Secure cookie would never come back"
    sent = github.token_requests[-1]
    assert sent["client_secret"] == ["client-secret"] and sent["code"] == [f"good-{login}-4242"]
    page = browser.get("/dashboard")
    assert page.status_code == 200 and f"@{login}" in page.text


def test_a_callback_with_another_state_is_refused(github_server: RunningServer) -> None:
    browser = Browser(github_server)
    begin(browser)
    done = browser.get("/auth/github/callback", code=f"good-{new_login()}-1", state="forged")
    assert done.status_code == 400 and "state mismatch" in done.text
    assert "bench_session" not in set_cookies(done)
    assert browser.get("/dashboard").status_code == 303


def test_a_callback_in_a_browser_that_did_not_start_it_is_refused(
        github_server: RunningServer) -> None:
    state = begin(Browser(github_server))
    other = Browser(github_server)
    done = other.get("/auth/github/callback", code=f"good-{new_login()}-1", state=state)
    assert done.status_code == 400 and "not started in this browser" in done.text
    assert "bench_session" not in set_cookies(done)


def test_denied_consent_says_so_and_signs_nobody_in(github_server: RunningServer) -> None:
    browser = Browser(github_server)
    state = begin(browser)
    done = browser.get("/auth/github/callback", error="access_denied", state=state,
                       error_description="The user has denied your application access.")
    assert done.status_code == 400 and "cancelled" in done.text
    assert "bench_session" not in set_cookies(done)


def test_a_code_github_refuses_is_a_clear_error(github_server: RunningServer) -> None:
    browser = Browser(github_server)
    state = begin(browser)
    done = browser.get("/auth/github/callback", code="expired-code", state=state)
    assert done.status_code == 400
    assert "GitHub did not accept the sign-in code" in done.text
    assert "incorrect or expired" in done.text
    assert "bench_session" not in set_cookies(done)


def test_a_token_github_will_not_use_is_a_clear_error(github: FakeGitHub,
                                                      github_server: RunningServer) -> None:
    browser = Browser(github_server)
    state = begin(browser)
    github.broken_user_endpoint = True
    try:
        done = browser.get("/auth/github/callback", code=f"good-{new_login()}-5", state=state)
    finally:
        github.broken_user_endpoint = False
    assert done.status_code == 400 and "GitHub refused to say who signed in" in done.text
    assert "bench_session" not in set_cookies(done)


def test_a_renamed_accounts_old_login_cannot_be_taken_over(github_server: RunningServer) -> None:
    login = new_login()
    first = Browser(github_server)
    assert first.get("/auth/github/callback", code=f"good-{login}-100",
                     state=begin(first)).status_code == 303
    second = Browser(github_server)
    taken = second.get("/auth/github/callback", code=f"good-{login}-200", state=begin(second))
    assert taken.status_code == 403 and "belongs to another GitHub account" in taken.text
    assert "bench_session" not in set_cookies(taken)


def test_with_github_configured_there_is_no_local_sign_in(github_server: RunningServer) -> None:
    browser = Browser(github_server)
    page = browser.get("/signin")
    assert "Sign in with GitHub" in page.text and "/signin/local" not in page.text
    link = signin_link(github_server)
    opened = browser.http.get(link)
    assert opened.status_code == 403 and 'name="login"' not in opened.text
    refused = browser.post("/signin/local", {"login": new_login(),
                                             "token": link.rsplit("token=", 1)[1]},
                           token_from="/try")
    assert refused.status_code == 403 and browser.session_cookie is None


def test_on_https_the_session_cookie_is_secure(tmp_path: Path) -> None:
    with serving(tmp_path, store="memory", public_url="https://bench.example") as running:
        browser = Browser(running)
        page = browser.get("/try")
        anonymous = set_cookies(page)["bench_csrf"]
        assert "Secure" in anonymous
        # The test talks plain http to the server behind the https address, so it hands the
        # Secure cookie back itself, as a browser would over https.
        browser.http.cookies.set("bench_csrf", anonymous.split(";")[0].split("=", 1)[1])
        token = browser.csrf("/try")
        done = browser.http.post("/try", data={"csrf": token},
                                 headers={"Origin": "https://bench.example"})
        assert done.status_code == 200
        assert "Secure" in set_cookies(done)["bench_session"]


# ---- local sign-in and sessions ---------------------------------------------------------------------


def test_local_sign_in_on_a_loopback_server(bench_server: RunningServer) -> None:
    browser = Browser(bench_server)
    login = browser.sign_in()
    assert f"@{login}" in browser.get("/dashboard").text


@pytest.mark.parametrize("name", ["a--b", "-leading", "trailing-", "x" * 40, "try--abc", ""])
def test_local_sign_in_takes_github_style_names_only(bench_server: RunningServer,
                                                     name: str) -> None:
    browser = Browser(bench_server)
    form = browser.signin_form()
    refused = browser.post("/signin/local", {**form, "login": name}, token_from=None)
    assert refused.status_code == 400 and browser.session_cookie is None


def test_sign_in_never_sends_the_browser_off_site(bench_server: RunningServer) -> None:
    for target in ("//evil.example/x", "https://evil.example", "/\\evil.example"):
        browser = Browser(bench_server)
        done = browser.post("/signin/local", {**browser.signin_form(), "login": new_login(),
                                              "next": target}, token_from=None)
        assert done.headers["location"] == "/dashboard", target


def test_a_tampered_or_forged_session_cookie_is_signed_out(bench_server: RunningServer) -> None:
    browser = Browser(bench_server)
    browser.sign_in()
    good = browser.session_cookie
    assert good is not None
    payload, expires, signature = good.split(".")
    now = bench_server.services.clock.now()
    forged_payload = signed_tokens.sign(b"x" * 48, "session", "whatever", 3600, now=now).split(".")[0]
    other_secret = signed_tokens.sign(b"another secret, not the server's.....", "session", "id", 3600,
                                      now=now)
    for cookie in (f"{forged_payload}.{expires}.{signature}",  # someone else's session id
                   f"{payload}.{int(expires) + 10**6}.{signature}",  # extended expiry
                   f"{payload}.{expires}.{signature[:-2]}AA",  # bad signature
                   other_secret, "garbage", ""):
        thief = Browser(bench_server)
        thief.http.cookies.set("bench_session", cookie)
        assert thief.get("/dashboard").status_code == 303, cookie
        assert thief.get("/signin").status_code == 200


def test_an_expired_session_cookie_is_signed_out(bench_server: RunningServer) -> None:
    secret = bench_server.services.secrets.session_key()
    browser = Browser(bench_server)
    browser.sign_in()
    now = bench_server.services.clock.now()
    session_id = signed_tokens.unsign(secret, "session", browser.session_cookie or "", now=now)
    expired = signed_tokens.sign(secret, "session", session_id, 60, now=now - timedelta(minutes=2))
    browser.http.cookies.set("bench_session", expired)
    assert browser.get("/dashboard").status_code == 303


def test_logout_ends_the_session_everywhere(bench_server: RunningServer) -> None:
    browser = Browser(bench_server)
    browser.sign_in()
    copy = Browser(bench_server)
    copy.http.cookies.set("bench_session", browser.session_cookie or "")
    assert copy.get("/dashboard").status_code == 200
    done = browser.post("/logout", {}, token_from="/dashboard")
    assert done.status_code == 303 and browser.session_cookie is None
    assert copy.get("/dashboard").status_code == 303, "the copied cookie died with the session"


# ---- CSRF -----------------------------------------------------------------------------------------


def test_state_changing_requests_without_a_valid_token_are_refused(
        bench_server: RunningServer) -> None:
    browser = Browser(bench_server)
    login = browser.sign_in()
    other = Browser(bench_server)
    other.sign_in()
    foreign = other.csrf("/dashboard")
    for path, data in (("/dashboard/new", {"slug": "csrf-agent"}),
                       ("/dashboard/keys", {"scope": "owner"}), ("/logout", {})):
        assert browser.post(path, data, token_from=None).status_code == 403, path
        assert browser.post(path, {**data, "csrf": "x" * 43}).status_code == 403, path
        assert browser.post(path, {**data, "csrf": foreign}).status_code == 403, path
    assert browser.get("/dashboard").status_code == 200, "still signed in: logout was refused"
    assert bench_server.store.accounts.list_keys(login) == [] and bench_server.store.agents.list_agents(login) == []


def test_a_request_from_another_origin_is_refused_even_with_a_token(
        bench_server: RunningServer) -> None:
    browser = Browser(bench_server)
    browser.sign_in()
    refused = browser.post("/dashboard/keys", {"scope": "owner"}, token_from="/dashboard/keys",
                           headers={"Origin": "https://evil.example"})
    assert refused.status_code == 403
    allowed = browser.post("/dashboard/keys", {"scope": "owner"}, token_from="/dashboard/keys",
                           headers={"Origin": bench_server.url})
    assert allowed.status_code == 200


def test_anonymous_forms_need_the_browsers_own_token(bench_server: RunningServer) -> None:
    """Login CSRF: another site must not sign a visitor in as someone else."""
    attacker = Browser(bench_server)
    form = attacker.signin_form()
    victim = Browser(bench_server)
    forged = victim.http.post("/signin/local", data={**form, "login": new_login()})
    assert forged.status_code == 403 and victim.session_cookie is None
