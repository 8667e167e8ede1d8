"""Every Python snippet the docs and the UI show runs as pasted into a file: the README's, the
SDK README's, the landing page's, the dashboard setup page's and the /try page's, each against a
real local server, with the SDK installed from that server's own `/simple/` index. Provider
clients in them talk to a loopback fake OpenAI server (`OPENAI_BASE_URL`), as a user's would
talk to OpenAI.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import RunningServer, poll, start_server
from tests.e2e.test_sdk_index import build_wheel, pip_install
from tests.fake_openai import answer, fake_openai
from tests.http.accounts_support import Browser

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
DOCS = ("README.md", "sdk/README.md")


def doc_snippets() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        for i, code in enumerate(FENCE.findall((ROOT / doc).read_text())):
            found.append((f"{doc}#{i + 1}", code))
    return found


def pre(page: str, element_id: str) -> str:
    match = re.search(rf'<pre id="{element_id}"[^>]*>(.*?)</pre>', page, re.S)
    assert match, element_id
    return html.unescape(match.group(1))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    wheels = build_wheel(tmp_path_factory.mktemp("sdk-dist"))
    running, uvicorn_server, thread = start_server(tmp_path_factory.mktemp("snippets"),
                                                   sdk_dist_dir=wheels)
    yield running
    uvicorn_server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def sdk_path(server: RunningServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The SDK as a user gets it: `pip install --index-url <server>/simple/ bench-observe`."""
    target = tmp_path_factory.mktemp("site")
    pip_install(f"{server.url}/simple/", target)
    return target


@pytest.fixture(scope="module")
def fake() -> Iterator[str]:
    with fake_openai(answer("Lisbon.", (100, 5))) as running:
        yield running.url


def run_file(code: str, directory: Path, sdk_path: Path, env: dict[str, str]) -> None:
    """`code` saved as a file and run with `python file.py`, the SDK from `sdk_path` first."""
    path = directory / "snippet.py"
    path.write_text(code)
    done = subprocess.run([sys.executable, str(path)], cwd=directory, capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, **env, "PYTHONPATH": str(sdk_path)})
    assert done.returncode == 0, f"{code}\n---\n{done.stderr}"


def user_env(server: RunningServer, key: str, fake: str) -> dict[str, str]:
    """What the docs tell a user to export, and what provider clients read."""
    return {"BENCH_KEY": key, "BENCH_ENDPOINT": server.url, "OPENAI_BASE_URL": fake,
            "OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-ant-test",
            "OTEL_EXPORTER_OTLP_ENDPOINT": server.url,
            "OTEL_EXPORTER_OTLP_HEADERS": f"X-Bench-Key={key},X-Bench-Agent=my-agent"}


def test_the_docs_have_python_snippets() -> None:
    assert {name.split("#")[0] for name, _ in doc_snippets()} == set(DOCS)


@pytest.mark.parametrize("name, code", doc_snippets(), ids=[n for n, _ in doc_snippets()])
def test_doc_snippet_runs_as_a_file(server: RunningServer, sdk_path: Path, fake: str,
                                    tmp_path: Path, name: str, code: str) -> None:
    login = "d" + uuid.uuid4().hex[:10]
    key = server.create_key(login)
    run_file(code, tmp_path, sdk_path, user_env(server, key, fake))
    if "bench.observe(" in code:
        poll(lambda: server.get(f"/api/agents/{login}/my-agent", key)["runs"], lambda n: n >= 1)


def test_the_landing_page_snippet_runs(server: RunningServer, sdk_path: Path, fake: str,
                                       tmp_path: Path) -> None:
    page = Browser(server).get("/").text
    assert f"pip install --index-url {server.url}/simple/ bench-observe" in pre(page, "install")
    login = "l" + uuid.uuid4().hex[:10]
    key = server.create_key(login)
    run_file(pre(page, "wrap"), tmp_path, sdk_path, user_env(server, key, fake))
    poll(lambda: server.get(f"/api/agents/{login}/my-agent", key)["runs"], lambda n: n == 1)


def test_the_setup_page_snippet_runs(server: RunningServer, sdk_path: Path, fake: str,
                                     tmp_path: Path) -> None:
    browser = Browser(server)
    login = browser.sign_in()
    page = browser.post("/dashboard/new", {"slug": "first-agent"},
                        token_from="/dashboard/new").text
    assert pre(page, "install") == f"pip install --index-url {server.url}/simple/ bench-observe"
    key = re.search(r"export BENCH_KEY=(\S+)", pre(page, "env")).group(1)
    run_file(pre(page, "template"), tmp_path, sdk_path, {"BENCH_KEY": key})
    poll(lambda: server.get(f"/api/agents/{login}/first-agent", key)["runs"], lambda n: n == 1)


def test_the_try_page_snippet_runs(sdk_path: Path,
                                   server: RunningServer, tmp_path: Path) -> None:
    browser = Browser(server)
    page = browser.post("/try", {}, token_from="/try").text
    login = re.search(r"@(try--[0-9a-f]+)/demo-agent", page).group(1)
    assert f"pip install --index-url {server.url}/simple/ bench-observe" in page
    run_file(pre(page, "try-snippet"), tmp_path, sdk_path, {})
    poll(lambda: browser.get(f"/api/agents/{login}/demo-agent").json()["runs"],
         lambda n: n >= 1)
