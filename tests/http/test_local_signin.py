"""Local sign-in through the front ends a self-hoster puts before the server (a same-host TCP
forwarder, a reverse proxy that adds no forwarding header), over real sockets: whoever reaches
the server signs in only with the one-time link its console shows, once, while it is fresh."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import timedelta
from pathlib import Path

import pytest
from bench_core.settings import AccountSettings

from tests.aws.moto_table import dynamo_store
from tests.concurrency import in_parallel
from tests.conftest import RunningServer, serving
from tests.http.accounts_support import Browser, new_login, signin_link
from tests.http.front_ends import headerless_proxy, tcp_forwarder

FRONT_ENDS: dict[str, Callable[[str], AbstractContextManager[str]]] = {
    "tcp-forwarder": tcp_forwarder, "headerless-proxy": headerless_proxy}
LOCAL_FORM = re.compile(r'action="/signin/local"|name="login"')
OWNER_KEY = re.compile(r"data-key>(bk_[A-Za-z0-9_-]+)<")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server on the embedded store without GitHub: the case local sign-in is made for."""
    with serving(tmp_path_factory.mktemp("local-signin"), store="memory") as running:
        yield running


@pytest.fixture(params=sorted(FRONT_ENDS))
def front(request: pytest.FixtureRequest, server: RunningServer) -> Iterator[str]:
    """The server's URL as a visitor reaches it through one kind of front end."""
    with FRONT_ENDS[request.param](server.url) as url:
        yield url


def visitor(front: str, server: RunningServer) -> Browser:
    """A browser that reaches `server` only through `front` (it may ask for links to sign in
    with, as the machine's user reads them off the console)."""
    browser = Browser(server)
    browser.url = front
    browser.http.base_url = front
    return browser


def mint_owner_key(browser: Browser) -> str | None:
    """What the keys page hands a browser that asks for an owner key (with the CSRF token of
    a page it can see); None if nothing."""
    page = "/dashboard/keys" if browser.session_cookie else "/try"
    made = browser.post("/dashboard/keys", {"scope": "owner"}, token_from=page)
    found = OWNER_KEY.search(made.text) if made.status_code == 200 else None
    return found.group(1) if found else None


# ---- a visitor without the link -------------------------------------------------------------------


def test_the_sign_in_page_offers_no_local_sign_in_without_the_link(front: str,
                                                                   server: RunningServer) -> None:
    page = visitor(front, server).get("/signin")
    assert page.status_code == 200
    assert not LOCAL_FORM.search(page.text), "a remote visitor is offered the local sign-in"


@pytest.mark.parametrize("token", [None, "", "forged-" + "x" * 40])
def test_a_visitor_without_the_link_cannot_sign_in_or_mint_keys(
        front: str, server: RunningServer, token: str | None) -> None:
    browser = visitor(front, server)
    fields = {"login": new_login(), "next": "/dashboard"}
    if token is not None:
        fields["token"] = token
    refused = browser.post("/signin/local", fields, token_from="/try")
    assert refused.status_code in (400, 403) and browser.session_cookie is None
    if token:
        opened = browser.get("/signin/local", token=token)
        assert opened.status_code == 400 and "not a sign-in link" in opened.text
        assert not LOCAL_FORM.search(opened.text)
    assert mint_owner_key(browser) is None
    assert browser.get("/dashboard").status_code == 303
    assert server.store.accounts.list_keys(fields["login"]) == []


# ---- the machine's user, with the link --------------------------------------------------------------


def test_the_link_signs_in_once_and_the_account_can_mint_a_key(front: str,
                                                               server: RunningServer) -> None:
    link = signin_link(server, base=front)
    browser = visitor(front, server)
    login = browser.sign_in(link=link)
    assert f"@{login}" in browser.get("/dashboard").text
    key = mint_owner_key(browser)
    assert key is not None and [k.login for k in server.store.accounts.list_keys(login)] == [login]

    again = visitor(front, server)
    reopened = again.http.get(link)
    assert reopened.status_code == 410 and "already been used" in reopened.text
    assert not LOCAL_FORM.search(reopened.text)
    token = link.rsplit("token=", 1)[1]
    replayed = again.post("/signin/local", {"login": new_login(), "token": token},
                          token_from="/try")
    assert replayed.status_code == 410 and "already been used" in replayed.text
    assert again.session_cookie is None


def test_the_browser_a_link_signed_in_goes_on_to_the_dashboard_when_it_opens_it_again(
        server: RunningServer) -> None:
    link = signin_link(server)
    browser = Browser(server)
    login = browser.sign_in(link=link)
    again = browser.http.get(link)
    assert again.status_code == 303 and again.headers["location"] == "/dashboard"
    assert f"@{login}" in browser.get("/dashboard").text
    stranger = Browser(server).http.get(link)
    assert stranger.status_code == 410 and "already been used" in stranger.text


def test_an_expired_link_says_so(front: str, server: RunningServer) -> None:
    link = signin_link(server, base=front, age=timedelta(minutes=16))
    browser = visitor(front, server)
    opened = browser.http.get(link)
    assert opened.status_code == 410 and "expired" in opened.text
    assert "bench-server signin-link" in opened.text, "says how to get a new one"
    refused = browser.post("/signin/local", {"login": new_login(),
                                             "token": link.rsplit("token=", 1)[1]},
                           token_from="/try")
    assert refused.status_code == 410 and browser.session_cookie is None


def test_a_link_opened_but_not_used_stays_good_until_used(server: RunningServer) -> None:
    """Opening the page (a browser's prefetch, a second look) does not spend the link; a name
    GitHub would refuse does not either."""
    link = signin_link(server)
    browser = Browser(server)
    assert browser.http.get(link).status_code == 200
    form = browser.signin_form(link)
    assert browser.post("/signin/local", {**form, "login": "a--b"}).status_code == 400
    assert browser.sign_in(link=link)


@pytest.mark.parametrize("store", ["sqlite", "dynamodb"])
def test_a_link_signs_in_once_however_many_send_it_at_once(tmp_path: Path, store: str) -> None:
    """Eight tabs sending one link's form at the same moment: one session, on either store
    (a link made by one process is spent in the store all of them share)."""
    with contextlib.ExitStack() as stack:
        over = stack.enter_context(dynamo_store()) if store == "dynamodb" else None
        running = stack.enter_context(serving(
            tmp_path, over=over, store=store,
            accounts=AccountSettings(local_signin=True, session_secret="s" * 48)))
        link = signin_link(running)
        browsers = [Browser(running) for _ in range(8)]
        forms = [browser.signin_form(link) for browser in browsers]
        answers = in_parallel(*(
            lambda b=b, f=f: b.post("/signin/local", {**f, "login": new_login()}).status_code
            for b, f in zip(browsers, forms, strict=True)))
        assert sorted(answers) == [303] + [410] * 7
        assert sum(b.session_cookie is not None for b in browsers) == 1


def test_the_page_behind_the_link_sends_it_to_no_other_site(server: RunningServer) -> None:
    """Its URL holds the secret: no referrer leaves for another site. (`no-referrer` would
    make browsers send `Origin: null` with the form, which the CSRF check refuses.)"""
    opened = Browser(server).http.get(signin_link(server))
    assert opened.headers["referrer-policy"] == "same-origin"
    assert opened.headers["cache-control"] == "private, no-store"


# ---- where local sign-in is never on ------------------------------------------------------------------


@pytest.mark.parametrize(("public_url", "local_signin"), [
    ("https://bench.example.com", None), ("https://bench.example.com", True), (None, False)],
    ids=["https", "https-forced", "turned-off"])
def test_no_local_sign_in_where_it_is_off_even_with_a_link(
        tmp_path: Path, public_url: str | None, local_signin: bool | None) -> None:
    accounts = AccountSettings(local_signin=local_signin)
    with serving(tmp_path, store="memory", accounts=accounts, public_url=public_url) as running:
        link = signin_link(running)
        browser = Browser(running)
        assert not LOCAL_FORM.search(browser.get("/signin").text)
        opened = browser.http.get(link)
        assert opened.status_code == 403 and not LOCAL_FORM.search(opened.text)
        refused = browser.post("/signin/local", {"login": new_login(),
                                                 "token": link.rsplit("token=", 1)[1]},
                               token_from="/try")
        assert refused.status_code == 403 and "local sign-in is off" in refused.text
        assert browser.session_cookie is None
