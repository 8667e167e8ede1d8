"""Who owns a login on this Bench: the first to sign in with it (locally, or with the GitHub
account of that id, which keeps it through renames elsewhere)."""

from __future__ import annotations

from ..domain.models import iso
from . import AccountConcerns


def claim(store: AccountConcerns, login: str, github_id: int | None) -> bool:
    """Claim `login` (or confirm it is ours); False if another GitHub account holds it."""
    return store.accounts.claim_login(login, github_id, iso(store.clock.now()))
