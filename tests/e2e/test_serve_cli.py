"""`bench-server serve` (what `make run` runs): another port and host work, a port in use is
one line on stderr, before anything claims the server is running; the console shows the
one-time link that signs the machine's user in (and `bench-server signin-link` another); the
data directory is made for this user alone."""

from __future__ import annotations

import contextlib
import functools
import os
import queue
import re
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
from bench_core.ports.store import Store
from bench_core.runtime.adapters import open_store
from bench_core.settings import Settings

from tests.conftest import free_port, poll
from tests.http.accounts_support import Browser

ROOT = Path(__file__).resolve().parents[2]
SERVER = str(Path(sys.executable).with_name("bench-server"))
LINE_WAIT_S = 20
LINK = re.compile(r"^Sign in \(works once, for 15 minutes; .*\): (http://\S+)$")


class Served:
    """A `bench-server serve` process: where it answers, its console (read as it comes), and
    its data directory's store opened beside it (as `bench-server keys` opens it)."""

    def __init__(self, url: str, process: subprocess.Popen[str], data_dir: Path) -> None:
        self.url, self.process, self.data_dir = url, process, data_dir
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line.rstrip("\n"))

    @functools.cached_property
    def store(self) -> Store:
        return open_store(Settings(data_dir=self.data_dir))

    def line(self) -> str:
        """The console's next line ("" if none comes within the hang guard's time)."""
        try:
            return self._lines.get(timeout=LINE_WAIT_S)
        except queue.Empty:
            return ""

    def stop(self) -> tuple[str, str]:
        """Stop it; what is left of its stdout, and its stderr."""
        self.process.terminate()
        self.process.wait(timeout=20)
        assert self.process.stderr is not None
        err = self.process.stderr.read()
        rest = []
        with contextlib.suppress(queue.Empty):
            while True:
                rest.append(self._lines.get(timeout=1))
        return "\n".join(rest), err


def _env(**variables: str) -> dict[str, str]:
    """This environment without the test's own Bench settings, plus `variables`."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("BENCH_")}, **variables}


@contextlib.contextmanager
def serve(data_dir: Path, **variables: str) -> Iterator[Served]:
    """`bench-server serve` on a free port over `data_dir`, answering before it is handed out."""
    port = free_port()
    process = subprocess.Popen([SERVER, "serve", "--port", str(port), "--host", "127.0.0.1",
                                "--data-dir", str(data_dir)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=_env(**variables))
    served = Served(f"http://127.0.0.1:{port}", process, data_dir)
    try:
        assert served.line().startswith(f"Bench is running at {served.url}")

        def health() -> int:
            try:
                return httpx.get(f"{served.url}/healthz", timeout=2).status_code
            except httpx.TransportError:
                return 0
        assert poll(health, lambda status: status == 200) == 200
        yield served
    finally:
        if process.poll() is None:
            served.stop()


def test_serve_on_another_port_answers(tmp_path: Path) -> None:
    with serve(tmp_path) as served:
        assert httpx.get(f"{served.url}/healthz", timeout=10).status_code == 200


def test_the_console_link_signs_the_local_user_in_once(tmp_path: Path) -> None:
    with serve(tmp_path) as served:
        found = LINK.match(served.line())
        assert found, "serve printed no sign-in link"
        link = found.group(1)
        assert link.startswith(f"{served.url}/signin/local?token=")
        browser = Browser(served)
        login = browser.sign_in(link=link)
        assert f"@{login}" in browser.get("/dashboard").text
        made = browser.post("/dashboard/keys", {"scope": "owner"}, token_from="/dashboard/keys")
        key = re.search(r"data-key>(bk_[\w-]+)<", made.text)
        assert key, "the signed-in account could not make a key"
        usage = httpx.get(f"{served.url}/api/usage", headers={"X-Bench-Key": key.group(1)})
        assert usage.json()["login"] == login

        reused = httpx.get(link, timeout=10)
        assert reused.status_code == 410 and "already been used" in reused.text

        made_elsewhere = subprocess.run(  # knows where serve runs on this data directory
            [SERVER, "signin-link", "--data-dir", str(tmp_path)],
            capture_output=True, text=True, timeout=60, env=_env(), check=True)
        another = LINK.match(made_elsewhere.stdout.strip())
        assert another and another.group(1) != link
        assert another.group(1).startswith(f"{served.url}/signin/local?token=")
        assert Browser(served).sign_in(link=another.group(1))


def test_no_link_where_local_sign_in_is_off(tmp_path: Path) -> None:
    github = {"BENCH_GITHUB_CLIENT_ID": "client", "BENCH_GITHUB_CLIENT_SECRET": "secret"}
    for variables in (github, {"BENCH_PUBLIC_URL": "https://bench.example.com"},
                      {"BENCH_LOCAL_SIGNIN": "0"}):
        with serve(tmp_path, **variables) as served:
            out, _ = served.stop()
        assert "/signin/local" not in out, variables
        refused = subprocess.run([SERVER, "signin-link", "--data-dir", str(tmp_path)],
                                 capture_output=True, text=True, timeout=60,
                                 env=_env(**variables))
        assert refused.returncode == 2 and refused.stdout == ""
        assert "local sign-in is off here" in refused.stderr, variables


# ---- the data directory ------------------------------------------------------------------------


def test_the_data_directory_is_made_for_this_user_alone(tmp_path: Path) -> None:
    data_dir = tmp_path / "new" / ".bench"
    with serve(data_dir) as served:
        assert httpx.get(f"{served.url}/try").status_code == 200  # makes the session secret
        _, err = served.stop()
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    modes = {f.name: stat.S_IMODE(f.stat().st_mode) for f in data_dir.iterdir()}
    assert {"bench.db", "session-secret", "served-at"} <= modes.keys()
    assert set(modes.values()) == {0o600}, modes
    assert "data directory" not in err


def test_an_open_data_directory_is_left_as_it_is_with_a_note(tmp_path: Path) -> None:
    """It may be shared on purpose; the files in it are private either way."""
    data_dir = tmp_path / "shared"
    data_dir.mkdir()
    data_dir.chmod(0o755)
    with serve(data_dir) as served:
        _, err = served.stop()
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o755
    assert f"note: the data directory {data_dir} is open to other users (mode 0755; its files " \
           f"are not): `chmod 700 {data_dir}` closes it" in err
    assert stat.S_IMODE((data_dir / "bench.db").stat().st_mode) == 0o600


def test_a_port_in_use_is_one_line_and_nothing_runs(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([SERVER, "serve", "--port", str(port), "--data-dir", str(tmp_path)],
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        f"bench-server: cannot listen on 127.0.0.1:{port}: Address already in use "
        "(try another port: make run PORT=8001)"]


def test_make_run_passes_port_and_host() -> None:
    def command(*assignments: str) -> str:
        out = subprocess.run(["make", "-n", "-o", ".venv/.installed-run", "-o", "sdk-wheel", "run",
                              *assignments], cwd=ROOT, capture_output=True, text=True,
                             timeout=60, check=True).stdout
        return next(line for line in out.splitlines() if "bench-server serve" in line)

    assert command("PORT=8001").endswith("serve --port 8001 --host 127.0.0.1")
    assert command("PORT=8001", "HOST=").endswith("serve --port 8001 ")
    assert command("HOST=0.0.0.0").endswith("serve --port 8000 --host 0.0.0.0")
