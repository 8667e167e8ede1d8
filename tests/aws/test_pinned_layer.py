"""What `sam build` installs is pinned, and it is what the tests run: every package of the core
layer and of each function's own requirements at one exact version, its dependencies included
(Lambda's arm64 Python 3.12), and the same version installed here (`make test` installs with
those files as pip constraints)."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.aws import cfn

LAYER = cfn.REPO / "layers" / "core" / "requirements.txt"
PIN_FILES = [LAYER, *sorted(cfn.FUNCTIONS_DIR.glob("*/requirements.txt"))]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!-]+)$")
LAMBDA = {**default_environment(), "python_version": "3.12", "python_full_version": "3.12.0",
          "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "aarch64",
          "os_name": "posix", "implementation_name": "cpython",
          "platform_python_implementation": "CPython"}


def pins(path: Path) -> dict[str, str]:
    """Package (canonical name) -> the exact version the file pins; any other line fails."""
    found = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        match = PIN.match(line.strip())
        assert match, f"{path}: {line!r} is not an exact pin (name==version)"
        found[canonicalize_name(match.group(1))] = match.group(2)
    return found


def needs_on_lambda(package: str) -> set[str]:
    """What a package requires on Lambda's Python, from its installed metadata (the same
    version, as test_the_tests_run_the_pinned_versions checks)."""
    needed = set()
    for text in metadata.requires(package) or []:
        requirement = Requirement(text)
        if requirement.marker is None or requirement.marker.evaluate({**LAMBDA, "extra": ""}):
            needed.add(canonicalize_name(requirement.name))
    return needed


@pytest.mark.parametrize("path", PIN_FILES, ids=lambda p: p.parent.name)
def test_every_package_lambda_gets_is_pinned_with_its_dependencies(path: Path) -> None:
    pinned = pins(path)
    unpinned = {f"{package} needs {need}" for package in pinned
                for need in needs_on_lambda(package) if need not in pinned}
    assert unpinned == set(), f"{path} leaves these to the resolver"


@pytest.mark.parametrize("path", PIN_FILES, ids=lambda p: p.parent.name)
def test_the_tests_run_the_pinned_versions(path: Path) -> None:
    differing = {package: (version, metadata.version(package))
                 for package, version in pins(path).items()
                 if metadata.version(package) != version}
    assert differing == {}, "pinned for Lambda, installed here"


def test_a_package_in_the_layer_and_a_function_is_pinned_alike() -> None:
    layer = pins(LAYER)
    for path in PIN_FILES[1:]:
        assert {p: v for p, v in pins(path).items() if layer.get(p, v) != v} == {}, path


def test_the_layer_builds_and_the_dev_install_uses_these_files() -> None:
    layer_make = (LAYER.parent / "Makefile").read_text()
    assert "-r requirements.txt" in layer_make
    make = (cfn.REPO / "Makefile").read_text()
    assert "PINS := layers/core/requirements.txt $(sort $(wildcard functions/*/requirements.txt))" in make
    installs = [line for line in make.splitlines() if "pip install" in line and " -e " in line]
    assert installs and all("$(CONSTRAINTS)" in line for line in installs)
