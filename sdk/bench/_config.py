"""Settings from arguments, then the environment, then files the CLI wrote.

Each install is self-hosted: without ``endpoint`` or ``BENCH_ENDPOINT`` events go to the server
``bench login`` signed in to, else to the local server, never to a third party.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

from bench._credentials import last_server, stored_key

DEFAULT_ENDPOINT = "http://127.0.0.1:8000"
MANIFEST = "bench.agent.json"


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
