"""`bench-server serve` (what `make run` runs): another port and host work, and a port in use is
one line on stderr, before anything claims the server is running."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import httpx

from tests.conftest import free_port, poll

ROOT = Path(__file__).resolve().parents[2]
SERVER = str(Path(sys.executable).with_name("bench-server"))


def test_serve_on_another_port_answers(tmp_path: Path) -> None:
    port = free_port()
    process = subprocess.Popen([SERVER, "serve", "--port", str(port), "--host", "127.0.0.1",
                                "--data-dir", str(tmp_path)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith(f"Bench is running at http://127.0.0.1:{port}")

        def health() -> int:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code
            except httpx.TransportError:
                return 0
        assert poll(health, lambda status: status == 200) == 200
    finally:
        process.terminate()
        process.wait(timeout=20)


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
