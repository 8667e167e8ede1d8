"""A key's record is kept a moment between requests (`accounts/key_cache.py`), never past the
second within which a revocation must hold: through the dashboard (this process) and through
`bench-server keys revoke` (another process, on the same SQLite file)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.conftest import RunningServer, serving
from tests.factories import batch, task_events
from tests.http.accounts_support import SHOWN_KEY, Browser

REVOCATION_HOLDS_WITHIN_S = 1.0


def ingest(server: RunningServer, key: str) -> httpx.Response:
    return httpx.post(server.url + "/ingest", json=batch("cached", task_events("t1")),
                      headers={"X-Bench-Key": key}, timeout=30)


def sending_until_refused(server: RunningServer, key: str) -> None:
    """The key, revoked just now, is refused a second later."""
    time.sleep(REVOCATION_HOLDS_WITHIN_S)
    assert ingest(server, key).status_code == 401


def test_a_key_revoked_on_the_dashboard_is_refused_a_second_later(
        bench_server: RunningServer) -> None:
    browser = Browser(bench_server)
    login = browser.sign_in()
    form = {"name": "ci", "scope": "owner"}
    key = SHOWN_KEY.search(browser.post("/dashboard/keys", form, token_from="/dashboard/keys").text)[1]
    assert ingest(bench_server, key).status_code == 200  # its record is now kept
    (record,) = bench_server.store.accounts.list_keys(login)
    assert browser.post("/dashboard/keys/revoke", {"key": record.key_hash},
                        token_from="/dashboard/keys").status_code == 303
    sending_until_refused(bench_server, key)


def test_a_key_revoked_by_another_process_is_refused_a_second_later(tmp_path: Path) -> None:
    with serving(tmp_path) as server:
        key = server.create_key("alice")
        for _ in range(3):  # the record read once, then kept
            assert ingest(server, key).status_code == 200
        bench_server_cli = Path(sys.executable).parent / "bench-server"
        done = subprocess.run([str(bench_server_cli), "keys", "revoke", key[:11],
                               "--data-dir", str(tmp_path)],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        sending_until_refused(server, key)

