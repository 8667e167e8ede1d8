"""Where ``bench login`` keeps keys: the user's config directory, never the project.

``~/.config/bench/credentials.json`` (or ``$XDG_CONFIG_HOME/bench``), readable by the user only,
one entry per server so a local and a hosted Bench can coexist; the server signed in to last is
the one used when no endpoint is given.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional


def credentials_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "bench" / "credentials.json"


def _load() -> dict[str, Any]:
    try:
        data = json.loads(credentials_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def stored_key(base_url: str) -> Optional[str]:
    """The key saved by ``bench login`` for this server, if any."""
    entry = _load().get("servers", {}).get(base_url)
    return entry.get("key") if isinstance(entry, dict) else None


def last_server() -> Optional[str]:
    """The server of the latest ``bench login`` (in a file written before it was recorded:
    the only server, if there is one)."""
    data = _load()
    servers = data.get("servers")
    if not isinstance(servers, dict):
        return None
    last = data.get("last")
    if isinstance(last, str) and last in servers:
        return last
    return next(iter(servers)) if len(servers) == 1 else None


def store_key(base_url: str, key: str, login: Optional[str]) -> Path:
    """Save a key for ``base_url`` with owner-only permissions; returns the file written."""
    path = credentials_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    data = _load()
    data.setdefault("servers", {})[base_url] = {"key": key, "login": login}
    data["last"] = base_url
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
    os.chmod(path, 0o600)
    return path
