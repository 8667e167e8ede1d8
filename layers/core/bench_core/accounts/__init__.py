"""Accounts: who a browser is, and how it proved it.

- `secrets`: the session-signing secret and GitHub's client secret (environment, SSM, or a
  file the local server makes itself).
- `signing`: HMAC-signed, expiring, purpose-bound tokens (session cookies, OAuth state, live-feed
  tokens), so one kind can never be replayed as another.
- `sessions`: server-side sessions behind signed cookies; signing out ends them everywhere.
- `github`: the OAuth authorization code flow against GitHub (or a stand-in at another URL).
- `device`: `bench login`'s device flow (approve a code in a signed-in browser).

Logins are GitHub's, lowercased; GitHub forbids two hyphens in a row, which leaves names such
as `try--…` free for the sandbox (`bench_core.trial.sandbox`) without ever meeting a real account.
"""

from __future__ import annotations

import re
from typing import Protocol

from ..ports.services import WithAccounts, WithClock

ACCOUNT_LOGIN = re.compile(r"^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,38}$")
"""A GitHub login, lowercased: letters, digits and single hyphens, not at either end."""


class AccountConcerns(WithAccounts, WithClock, Protocol):
    """What an account's use cases ask for: its records, and what "now" is (the store has both)."""


def valid_account_login(login: str) -> bool:
    return bool(ACCOUNT_LOGIN.match(login))
