"""The packaging check (scripts/package_check.py) as a test: every function, built for Lambda's
arm64 python3.12 with its layers, fits Lambda's limits. Needs the package index; skipped only
when it cannot be reached."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.aws import cfn

SCRIPT = cfn.REPO / "scripts" / "package_check.py"


def index_reachable() -> bool:
    """Whether pip's index answers (a TCP connect to the configured index host)."""
    done = subprocess.run([sys.executable, "-m", "pip", "config", "get", "global.index-url"],
                          capture_output=True, text=True)
    url = done.stdout.strip() if done.returncode == 0 and done.stdout.strip() \
        else "https://pypi.org/simple"
    parsed = urlparse(url)
    if parsed.scheme == "file":
        return True
    try:
        with socket.create_connection((parsed.hostname or "pypi.org", parsed.port or 443),
                                      timeout=5):
            return True
    except OSError:
        return False


def require_index(why: str = "the package index is unreachable") -> None:
    """Skip without the package index, except in CI (CI=true), where a skipped packaging check
    would pass a build that cannot deploy: there it fails."""
    if index_reachable():
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{why}: CI must run the packaging checks")
    pytest.skip(why)


@pytest.mark.network
@pytest.mark.timeout(600)
def test_each_function_with_its_layers_fits_lambda_for_arm64_python312() -> None:
    require_index()
    done = subprocess.run([sys.executable, str(SCRIPT), "--json"], capture_output=True,
                          text=True, timeout=540)
    assert done.stdout, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["problems"] == [], report["problems"]
    assert done.returncode == 0, done.stderr[-3000:]
    template_functions = {name for name, r in cfn.load_template()["Resources"].items()
                          if r["Type"] == "AWS::Serverless::Function"}
    assert set(report["functions"]) == template_functions
    for name, function in report["functions"].items():
        assert 0 < function["total_bytes"] < report["limit_bytes"], name
    (layer,) = report["layers"].values()
    assert {"fastapi", "mangum", "aws_lambda_powertools", "boto3"} <= set(layer["versions"])
    # The resolver got releases at least as new as the ones the tests run, not old ones that
    # happened to ship aarch64 wheels (what the manylinux2014 tag alone leads to).
    for package in ("pydantic", "pydantic_core", "fastapi"):
        assert _release(layer["versions"][package]) >= _release(version(package)), package
    assert _release(report["functions"]["McpFunction"]["versions"]["mcp"]) >= (2, 3)
    # A library a function packages itself shadows the layer's copy (/var/task comes first on
    # the path): McpFunction brings pydantic and starlette with the MCP SDK, which must be the
    # very releases the layer holds, or code tested against one would run on another.
    for name, function in report["functions"].items():
        for package, release in function["versions"].items():
            assert release == layer["versions"].get(package, release), (name, package)


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:3] if part.isdigit())


# ---- imports with nothing but what Lambda will have ----------------------------------------------

LAYER_REQUIREMENTS = cfn.REPO / "layers" / "core" / "requirements.txt"
IMPORT_CHECK = """
import json, sys
error = None
try:
    import app
    app.handler
except Exception as exc:
    error = f"{type(exc).__name__}: {exc}"
heavy = sorted(m for m in ("numpy", "sklearn", "scipy") if m in sys.modules)
print(json.dumps({"error": error, "heavy": heavy}))
"""


def installed_for_this_machine(requirements: Path) -> Path | None:
    """`requirements` installed for this interpreter into a cached folder (None when the file
    lists nothing): the same packages Lambda gets, built for this machine so they import here."""
    lines = [ln for ln in requirements.read_text().splitlines()
             if ln.strip() and not ln.strip().startswith("#")]
    if not lines:
        return None
    digest = hashlib.sha256("\n".join(lines).encode() + sys.version.encode()).hexdigest()[:12]
    target = Path(tempfile.gettempdir()) / f"bench-lambda-site-{digest}"
    if not (target / ".complete").exists():
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",
                               "--disable-pip-version-check", "--target", str(target),
                               "-r", str(requirements)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]
        (target / ".complete").touch()
    return target


def function_dirs() -> list[Path]:
    return sorted(p for p in cfn.FUNCTIONS_DIR.iterdir() if (p / "app.py").exists())


@pytest.mark.network
@pytest.mark.timeout(600)
@pytest.mark.parametrize("code_dir", function_dirs(), ids=lambda p: p.name)
def test_handler_imports_with_only_the_layer_and_its_own_requirements(code_dir: Path) -> None:
    """`python -S`: none of this venv's packages, only bench_core, the layer's requirements and
    the function's own -- a dependency missing from requirements.txt fails here, not in Lambda."""
    require_index()
    sites = [installed_for_this_machine(LAYER_REQUIREMENTS),
             installed_for_this_machine(code_dir / "requirements.txt")]
    path = [str(code_dir), str(cfn.REPO / "layers" / "core"), *(str(s) for s in sites if s)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "PYTHON"))}
    env.update(PYTHONPATH=os.pathsep.join(path), BENCH_STORE="dynamodb",
               BENCH_TABLE_NAME="bench", AWS_DEFAULT_REGION="us-east-1")
    done = subprocess.run([sys.executable, "-S", "-c", IMPORT_CHECK], cwd=code_dir, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["error"] is None, report["error"]
    assert report["heavy"] == []


@pytest.mark.network
@pytest.mark.timeout(600)
def test_every_library_bench_core_imports_is_in_a_requirements_file() -> None:
    """Lazy imports too (a page renderer, a protobuf decoder): each third-party module named in
    an import statement anywhere in bench_core is in the layer or in some function's
    requirements. The local-only server (uvicorn) and what Lambda's runtime provides are the
    exceptions."""
    require_index()
    sites = [s for s in [installed_for_this_machine(LAYER_REQUIREMENTS),
                         *(installed_for_this_machine(d / "requirements.txt")
                           for d in function_dirs())] if s]
    missing = {}
    for module, files in third_party_imports(cfn.REPO / "layers" / "core" / "bench_core").items():
        if module in LOCAL_ONLY:
            continue
        parts = module.split(".")
        if not any((s.joinpath(*parts)).is_dir() or s.joinpath(*parts[:-1], parts[-1] + ".py")
                   .exists() or any(s.joinpath(*parts[:-1]).glob(parts[-1] + ".*.so"))
                   for s in sites):
            missing[module] = sorted(files)
    assert missing == {}, "imported by bench_core, installed by no requirements.txt"


LOCAL_ONLY = {"uvicorn",  # `bench-server serve`, never in Lambda
              "snapshot_restore_py"}  # SnapStart's hooks: part of Lambda's Python runtime


def third_party_imports(package: Path) -> dict[str, set[str]]:
    """Module -> files importing it, for every import of a module outside the standard library
    and bench_core (namespace packages such as opentelemetry.* by their full name)."""
    found: dict[str, set[str]] = {}
    for file in package.rglob("*.py"):
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in ("bench_core", "__future__"):
                    continue
                module = ".".join(name.split(".")[:2]) if top in NAMESPACES else top
                found.setdefault(module, set()).add(str(file.relative_to(package)))
    return found


NAMESPACES = {"opentelemetry", "google"}


def test_a_layer_without_the_current_sdk_wheel_is_a_problem(tmp_path: Path) -> None:
    """/simple/ serves the wheel the layer carries: a layer built without it, or with another
    version's, would answer pip with an empty or stale index."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("package_check", SCRIPT)
    assert spec and spec.loader
    check = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = check  # its dataclasses look their module up
    try:
        spec.loader.exec_module(check)
    finally:
        del sys.modules[spec.name]
    site = tmp_path / "python"
    for data in check.LAYER_DATA:
        (site / data).parent.mkdir(parents=True, exist_ok=True)
        (site / data).touch()
    dist = site / "bench_core" / "sdk_dist"
    dist.mkdir()
    (dist / "bench_observe-0.0.1-py3-none-any.whl").touch()
    layer = check.Artifact("CoreLayer", "layer", tmp_path, tmp_path)
    (problem,) = check.layer_data_problems({"CoreLayer": layer})
    assert "bench_observe-0.0.1-py3-none-any.whl" in problem and "is not in the built layer" in problem
    (dist / f"bench_observe-{check.sdk_version()}-py3-none-any.whl").touch()
    assert check.layer_data_problems({"CoreLayer": layer}) == []
