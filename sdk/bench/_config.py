"""Settings from arguments, then the environment, then files the CLI wrote.

Each install is self-hosted: without ``endpoint`` or ``BENCH_ENDPOINT`` events go to the server
``bench login`` signed in to, else to the local server, never to a third party.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Optional

from bench._credentials import last_server, stored_key
from bench._git import head_commit

DEFAULT_ENDPOINT = "http://127.0.0.1:8000"
MANIFEST = "bench.agent.json"
MAX_VERSION_CHARS = 64
"""The server's limit on a version (``bench_core.domain.field_limits.VERSION_RULE``)."""
_NOT_IN_VERSIONS = re.compile(r"[^A-Za-z0-9._+-]")


def base_url(endpoint: Optional[str] = None, key: Optional[str] = None) -> str:
    """The server's base URL: an explicit endpoint, ``BENCH_ENDPOINT``, else (unless a key is
    given, or in ``BENCH_KEY``: it may be another server's) the server of the last ``bench
    login``, whose key is stored with it, else the local server.

    Accepts either a base URL or the full ``/ingest`` URL.
    """
    url = endpoint or os.environ.get("BENCH_ENDPOINT")
    if not url and not (key or os.environ.get("BENCH_KEY")):
        url = last_server()
    url = (url or DEFAULT_ENDPOINT).strip().rstrip("/")
    return url[: -len("/ingest")] if url.endswith("/ingest") else url


def disabled() -> bool:
    """``BENCH_DISABLED=1`` (or true/yes/on) turns the SDK into no-ops."""
    return os.environ.get("BENCH_DISABLED", "").strip().lower() in {"1", "true", "yes", "on"}


def api_key(explicit: Optional[str], server: str) -> Optional[str]:
    return explicit or os.environ.get("BENCH_KEY") or stored_key(server)


def manifest_slug(cwd: Optional[Path] = None) -> Optional[str]:
    """The slug from ``bench.agent.json`` written by ``bench init``, if present and valid."""
    try:
        data = json.loads(((cwd or Path.cwd()) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    slug = data.get("slug") if isinstance(data, dict) else None
    return slug if isinstance(slug, str) and slug else None


def agent_slug(explicit: Optional[str]) -> Optional[str]:
    return explicit or os.environ.get("BENCH_AGENT") or manifest_slug()


def agent_version(explicit: Optional[str], cwd: Optional[Path] = None) -> Optional[str]:
    """The agent's version: ``explicit``, else ``BENCH_AGENT_VERSION``, else the short hash of
    the git commit checked out in the working directory, else None. Made to fit the server's
    rule (letters, digits, ``._+-``, at most 64, starting with a letter or digit: other
    characters become ``-``) rather than have every batch refused."""
    given = explicit if explicit is not None else os.environ.get("BENCH_AGENT_VERSION")
    if given is None or not str(given).strip():
        return head_commit(cwd)
    fitted = _NOT_IN_VERSIONS.sub("-", str(given).strip())[:MAX_VERSION_CHARS].lstrip("._+-")
    if fitted != given:
        logging.getLogger("bench").warning(
            "bench: version %r sent as %r (letters, digits, '._+-', at most %d)",
            given, fitted or None, MAX_VERSION_CHARS)
    return fitted or None
