"""The user item (USER#{login}, META), written by the accounts concern (keys, sign-in) and by
every creation of an agent, which counts them on it (`agents.counting_user`)."""

from __future__ import annotations

from typing import Any

from .keys import META
from .values import Update, to_item, ttl


def user_key(login: str) -> dict[str, Any]:
    return to_item({"pk": f"USER#{login}", "sk": META})


def user_upsert(login: str, now: str, until: str | None = None) -> Update:
    """`until`: the user of a temporary agent goes with it."""
    update = Update(user_key(login), set={"login": login}, set_if_absent={"created_at": now})
    if until is not None:
        update.set["expires_at"] = ttl(until)["expires_at"]
    return update
