"""`/simple/`: the server's own SDK as a package index. A real `pip install --index-url
<server>/simple/ bench-observe` (no other index) installs the wheel built from sdk/, which then
delivers a task to the same server; a server installed from its wheel into a fresh venv serves
it too; the PEP 691 JSON form and the HTML form list the same file with its hash; names are
normalised as PEP 503 says; a server packaged without the wheel says how to build it.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import sysconfig
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import RunningServer, free_port, poll, start_server
from tests.wheel_support import build_wheel as build_server_wheel
from tests.wheel_support import sdk_wheel_name, source_tree

ROOT = Path(__file__).resolve().parents[2]
JSON = "application/vnd.pypi.simple.v1+json"


def build_wheel(out: Path) -> Path:
    """The SDK wheel as `make sdk-wheel` builds it."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "-w", str(out), str(ROOT / "sdk")],
                   check=True, timeout=300, capture_output=True)
    return out


@pytest.fixture(scope="module")
def wheel_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("sdk-dist"))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, wheel_dir: Path) -> Iterator[RunningServer]:
    running, uvicorn_server, thread = start_server(tmp_path_factory.mktemp("simple-data"),
                                                   sdk_dist_dir=wheel_dir)
    yield running
    uvicorn_server.should_exit = True
    thread.join(timeout=10)


def pip_install(index: str, target: Path) -> None:
    """`pip install --index-url <index> bench-observe` into `target`, no other index."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-cache-dir",
                    "--index-url", index, "--target", str(target), "bench-observe"],
                   check=True, timeout=300, capture_output=True)


def test_pip_installs_the_servers_own_sdk_and_it_delivers(server: RunningServer,
                                                          tmp_path: Path) -> None:
    target = tmp_path / "site"
    pip_install(f"{server.url}/simple/", target)
    from bench._version import __version__

    assert (target / f"bench_observe-{__version__}.dist-info").is_dir()
    login = "s" + uuid.uuid4().hex[:10]
    key = server.create_key(login)
    script = (f"import sys; sys.path.insert(0, {str(target)!r})\n"
              "import bench\n"
              f"agent = bench.observe(api_key={key!r}, agent='pip-check', endpoint={server.url!r})\n"
              "with agent.span('hello', {'q': 1}) as t:\n"
              "    t.set_output('world')\n"
              "agent.shutdown_sync()\n"
              "print(bench.__file__)\n")
    done = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(str(target))
    poll(lambda: server.get(f"/api/agents/{login}/pip-check", key)["runs"], lambda n: n == 1)


def test_json_and_html_forms_list_the_same_wheel(server: RunningServer, wheel_dir: Path) -> None:
    [wheel] = list(wheel_dir.glob("*.whl"))
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    as_json = httpx.get(f"{server.url}/simple/bench-observe/", headers={"accept": JSON})
    assert as_json.headers["content-type"] == JSON
    [entry] = as_json.json()["files"]
    assert (entry["filename"], entry["hashes"], entry["requires-python"]) == (
        wheel.name, {"sha256": digest}, ">=3.9")
    as_html = httpx.get(f"{server.url}/simple/bench-observe/")
    assert f'href="{wheel.name}#sha256={digest}"' in as_html.text
    assert 'data-requires-python="&gt;=3.9"' in as_html.text
    root = httpx.get(f"{server.url}/simple/", headers={"accept": f"{JSON}, text/html;q=0.01"})
    assert root.json()["projects"] == [{"name": "bench-observe"}]
    download = httpx.get(f"{server.url}/simple/bench-observe/{wheel.name}")
    assert hashlib.sha256(download.content).hexdigest() == digest


def test_names_are_normalised_and_others_are_not_here(server: RunningServer) -> None:
    moved = httpx.get(f"{server.url}/simple/Bench_Observe/")
    assert moved.status_code == 301 and moved.headers["location"] == "/simple/bench-observe/"
    assert httpx.get(f"{server.url}/simple/requests/").status_code == 404
    assert httpx.get(f"{server.url}/simple/bench-observe/evil.whl").status_code == 404


def test_a_server_without_the_wheel_says_how_to_build_it(tmp_path: Path) -> None:
    running, uvicorn_server, thread = start_server(tmp_path / "data",
                                                   sdk_dist_dir=tmp_path / "empty")
    try:
        missing = httpx.get(f"{running.url}/simple/bench-observe/")
        assert missing.status_code == 404 and "make sdk-wheel" in missing.json()["error"]
    finally:
        uvicorn_server.should_exit = True
        thread.join(timeout=10)


def fresh_venv(path: Path) -> Path:
    """A venv of this Python with nothing installed; its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True,
                   timeout=120)
    return path / "bin" / "python"


def pip_into(python: Path, *args: str) -> None:
    """This pip installing into `python`'s venv, reading no configuration: no index but the one
    `args` name, no find-links, no cache."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))}
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                           "--quiet", "--no-cache-dir", *args], capture_output=True, text=True,
                          timeout=300, env={**env, "PIP_CONFIG_FILE": os.devnull})
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.timeout(600)
def test_a_server_installed_from_its_wheel_serves_its_sdk(tmp_path: Path) -> None:
    """`pip install .` (no editable install, no repository on the path): the installed
    `bench-server serve` serves the SDK that `pip install --index-url` then installs."""
    wheel = build_server_wheel(source_tree(tmp_path / "src"), tmp_path / "dist", isolated=False)
    server_python = fresh_venv(tmp_path / "server")
    pip_into(server_python, "--no-deps", "--no-index", str(wheel))
    # its dependencies from this venv's site-packages, whose .pth files (the editable installs of
    # bench_core and the SDK) a path listed in a .pth does not run
    site = subprocess.run([server_python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "PYTHON"))}
    where = subprocess.run([server_python, "-c", "import bench_core; print(bench_core.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert where.stdout.startswith(site), where.stdout
    port, log = free_port(), tmp_path / "server.log"
    with log.open("w") as errors:
        server = subprocess.Popen([server_python.with_name("bench-server"), "serve", "--port",
                                   str(port), "--data-dir", str(tmp_path / "data")],
                                  cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=errors)
    url = f"http://127.0.0.1:{port}"
    try:
        def index() -> int:
            try:
                return httpx.get(f"{url}/simple/bench-observe/", timeout=5).status_code
            except httpx.TransportError:
                return 0
        status = poll(index, lambda status: status != 0 or server.poll() is not None)
        assert status == 200, (status, log.read_text()[-2000:])
        client_python = fresh_venv(tmp_path / "client")
        pip_into(client_python, "--index-url", f"{url}/simple/", "bench-observe")
    finally:
        server.terminate()
        server.wait(timeout=20)
    imported = subprocess.run([client_python, "-c", "import bench, bench._version as v\n"
                               "print(v.__version__, bench.__file__)"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, check=True).stdout.split()
    served = Path(site) / "bench_core" / "sdk_dist" / sdk_wheel_name()
    assert served.is_file() and imported[0] == served.name.split("-")[1]
    assert imported[1].startswith(str(tmp_path / "client"))
