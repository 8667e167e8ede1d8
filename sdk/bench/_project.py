"""What ``bench init`` and ``bench doctor`` know about a project.

``init`` detects the stack from the project's dependency files, writes ``bench.agent.json`` (the
portable manifest) and a blank ``BENCH_KEY=`` in ``.env.example``. It never writes a key.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from bench import _config

DEPENDENCY_FILES = ("pyproject.toml", "requirements.txt", "requirements-dev.txt", "setup.cfg", "setup.py", "Pipfile")
STACKS = ("langchain", "openai", "anthropic")
"""Detected libraries, most specific first: a LangChain app usually also depends on openai."""

def install_command(endpoint: Optional[str] = None) -> str:
    """Install from the Bench you send to (its /simple/ index serves the SDK matching it)."""
    return f"pip install --index-url {_config.base_url(endpoint)}/simple/ bench-observe"

ENV_EXAMPLE = ".env.example"


class ProjectError(Exception):
    """A problem the user can fix; the CLI prints it as one line."""


def slugify(value: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-")[:64]


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


@dataclass
class Project:
    root: Path
    name: Optional[str] = None
    version: Optional[str] = None
    repository: Optional[str] = None
    stacks: list[str] = field(default_factory=list)

    @property
    def framework(self) -> str:
        return self.stacks[0] if self.stacks else "custom"


def detect_project(root: Path) -> Project:
    """Read the package name, version, repository and libraries from the project's files."""
    pyproject = _read(root / "pyproject.toml")
    deps = "\n".join(_read(root / name) for name in DEPENDENCY_FILES).lower()
    name = re.search(r'(?m)^\s*name\s*=\s*["\']([^"\']+)', pyproject)
    version = re.search(r'(?m)^\s*version\s*=\s*["\']([^"\']+)', pyproject)
    stacks = [s for s in STACKS if re.search(rf"(?m)(^|[\s\"'\[,]){s}([-_\w]*)?\s*([<>=~!\[;\"',]|$)", deps)]
    return Project(
        root=root,
        name=name.group(1) if name else None,
        version=version.group(1) if version else None,
        repository=_git_remote(root),
        stacks=stacks,
    )


def _git_remote(root: Path) -> Optional[str]:
    config = _read(root / ".git" / "config")
    match = re.search(r'\[remote "origin"\][^\[]*?url\s*=\s*(\S+)', config)
    if not match:
        return None
    url = match.group(1).replace("git@github.com:", "https://github.com/")
    return url[:-4] if url.endswith(".git") else url


def build_manifest(slug: str, display_name: str, project: Project) -> dict[str, Any]:
    return {
        "schema_version": "1",
        "slug": slug,
        "display_name": display_name,
        "language": "python",
        "framework": project.framework,
        "source": {"repository": project.repository, "version": project.version},
        "capability": {
            "schema_version": "1",
            "description": f"{display_name} agent",
            "skills": [{
                "id": "general",
                "name": "General task",
                "description": "Describe the agent's main capability before publishing.",
                "tags": [],
                "input_modes": ["application/json"],
                "output_modes": ["application/json"],
                "examples": [],
            }],
        },
        "invocation": {"mode": "disabled"},
        "observability": {"provider": "bench", "sdk": "bench-observe", "environment_variable": "BENCH_KEY"},
    }


def snippet(slug: str) -> str:
    return "\n".join([
        "import bench",
        "",
        f'agent = bench.observe(agent="{slug}")  # key from BENCH_KEY, server from BENCH_ENDPOINT',
        "",
        'with agent.span("answer", {"question": question}) as task:   # or: async with',
        "    answer = run_my_agent(question)",
        '    task.log("sources", 3)',
        "    task.cost(0.004)",
        "    task.set_output(answer)",
    ])


@dataclass
class InitResult:
    slug: str
    display_name: str
    project: Project
    manifest_path: Path
    manifest_written: bool
    env_path: Path


def init_project(root: Path, slug: Optional[str], name: Optional[str], force: bool) -> InitResult:
    project = detect_project(root)
    resolved = slugify(slug or project.name or root.resolve().name) or "my-agent"
    display_name = name or " ".join(part.capitalize() for part in resolved.split("-"))
    manifest_path = root / _config.MANIFEST
    exists = manifest_path.exists()
    if exists and not force and _config.manifest_slug(root) is None:
        raise ProjectError(f"{manifest_path} exists but is not a valid manifest; fix it or use --force")
    written = force or not exists
    if written:
        manifest = build_manifest(resolved, display_name, project)
        manifest_path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    else:
        resolved = _config.manifest_slug(root) or resolved
    env_path = root / ENV_EXAMPLE
    env_text = _read(env_path)
    if not re.search(r"(?m)^BENCH_KEY=", env_text):
        separator = "\n" if env_text and not env_text.endswith("\n") else ""
        env_path.write_text(f"{env_text}{separator}BENCH_KEY=\n", encoding="utf-8")
    return InitResult(resolved, display_name, project, manifest_path, written, env_path)


def diagnose(root: Path, endpoint: Optional[str]) -> list[str]:
    """Everything missing before events can flow, as short fix-it sentences: the server is
    asked whether it accepts the key (nothing is stored)."""
    from bench._verify import key_problem, reachable

    issues = []
    if sys.version_info < (3, 9):
        issues.append("Python 3.9 or newer is required.")
    slug = _config.agent_slug(None)
    if (root / _config.MANIFEST).exists() and _config.manifest_slug(root) is None:
        issues.append(f"{_config.MANIFEST} is not valid JSON with a slug; run `bench init --force`.")
    elif slug is None:
        issues.append(f"No agent slug: run `bench init` (writes {_config.MANIFEST}) or set BENCH_AGENT.")
    elif slugify(slug) != slug:
        issues.append(f"Agent slug {slug!r} is not a valid slug (lowercase letters, digits, dashes).")
    server = _config.base_url(endpoint)
    key = _config.api_key(None, server)
    if not key:
        issues.append(f"No key: set BENCH_KEY or run `bench login --endpoint {server}`.")
    if _config.disabled():
        issues.append("BENCH_DISABLED is set: the SDK records nothing.")
    problem = reachable(server)
    if problem:
        issues.append(f"Cannot reach the Bench server at {server} ({problem}); start it or set BENCH_ENDPOINT.")
    elif key:
        problem = key_problem(server, key)
        if problem:
            issues.append(problem)
    return issues
