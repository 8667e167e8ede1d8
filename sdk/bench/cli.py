"""The ``bench`` command: ``init``, ``doctor``, ``test``, ``login``, ``publish``, ``call``, ``benchmark``,
``check``.

Standard library only. Each command is registered by one ``_add_*`` function on the shared
subparser group, so a new command (or a group such as ``bench benchmark run``) is one more
function. Every failure is one line on stderr and a non-zero exit.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NoReturn, Optional, Sequence

from bench import _config
from bench._benchmark import DEFAULT_WAIT_S, BenchmarkError, run_benchmark, show_run
from bench._benchmark import list_lines as benchmark_list_lines
from bench._benchmark import run_lines as benchmark_run_lines
from bench._check import EXIT, EXIT_ERROR, CheckError, as_json, check, check_benchmark, report_lines
from bench._login import LoginError, device_login
from bench._project import (
    ProjectError,
    detect_project,
    diagnose,
    init_project,
    install_command,
    snippet,
)
from bench._reuse import ReuseError, call, publish
from bench._verify import VerifyError, send_verification_task
from bench._version import __version__


class CliError(Exception):
    """A failure to report as one line (``bench: <message>``) with exit status 1."""


def _endpoint_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--endpoint", help="Bench server URL (default: BENCH_ENDPOINT, else http://127.0.0.1:8000)")


def _agent_target(endpoint: Optional[str], slug: Optional[str], flag: str) -> tuple[str, str, str]:
    """The server, agent slug and key a command writes with, or a CliError naming what is missing."""
    server = _config.base_url(endpoint)
    slug = _config.agent_slug(slug)
    if not slug:
        raise CliError(f"no agent slug: pass {flag}, set BENCH_AGENT or run `bench init`")
    key = _config.api_key(None, server)
    if not key:
        raise CliError(f"no key: set BENCH_KEY or run `bench login --endpoint {server}`")
    return server, slug, key


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors exit ``error_status``: 2 as argparse's, but
    `EXIT_ERROR` for ``bench check``, where 2 means "not enough runs yet"."""

    error_status = 2

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(self.error_status, f"{self.prog}: error: {message}\n")


if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[_Parser]


# ── init ─────────────────────────────────────────────────────────────────────────────────────

def _add_init(commands: Subparsers) -> None:
    parser = commands.add_parser("init", help="detect the stack, write bench.agent.json and .env.example")
    parser.add_argument("--agent", metavar="SLUG", help="agent slug (default: the project name)")
    parser.add_argument("--name", help="display name (default: from the slug)")
    parser.add_argument("--install", action="store_true",
                        help="also pip install the SDK from the server's /simple/ index")
    _endpoint_option(parser)
    parser.add_argument("--force", action="store_true", help="overwrite an existing bench.agent.json")
    parser.set_defaults(run=_init)


def _init(args: argparse.Namespace) -> int:
    result = init_project(Path.cwd(), args.agent, args.name, args.force)
    stack = ", ".join(result.project.stacks) or "no LLM library detected"
    print(f"Bench is set up for {result.display_name} ({result.slug}). Stack: {stack}.")
    print(f"{'Wrote' if result.manifest_written else 'Kept'} {result.manifest_path}")
    print(f"Added a blank BENCH_KEY= to {result.env_path} (the key itself is never written).\n")
    install = install_command(args.endpoint)
    if args.install:
        if subprocess.run([sys.executable, "-m", *shlex.split(install)]).returncode != 0:
            raise CliError(f"install failed; run it yourself: {install}")
        print("Installed bench-observe.\n")
    else:
        print(f"1. Install:     {install}")
    print("2. Key:         export BENCH_KEY=... (from your dashboard, or run `bench login`)")
    print("3. Instrument:\n")
    print("\n".join(f"     {line}" for line in snippet(result.slug).splitlines()))
    print("\n4. Verify:      bench test")
    return 0


# ── doctor ───────────────────────────────────────────────────────────────────────────────────

def _add_doctor(commands: Subparsers) -> None:
    parser = commands.add_parser("doctor", help="report what is missing before events can flow")
    _endpoint_option(parser)
    parser.set_defaults(run=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    issues = diagnose(Path.cwd(), args.endpoint)
    for issue in issues:
        print(f"✗ {issue}", file=sys.stderr)
    if issues:
        return 1
    print(f"✓ Ready: agent {_config.agent_slug(None)} -> {_config.base_url(args.endpoint)} (key accepted)")
    return 0


# ── test ─────────────────────────────────────────────────────────────────────────────────────

def _add_test(commands: Subparsers) -> None:
    parser = commands.add_parser("test", help="send one verification task and print the profile URL")
    parser.add_argument("--agent", metavar="SLUG", help="agent slug (default: BENCH_AGENT, then bench.agent.json)")
    _endpoint_option(parser)
    parser.set_defaults(run=_test)


def _test(args: argparse.Namespace) -> int:
    server, slug, key = _agent_target(args.endpoint, args.agent, "--agent")
    project = detect_project(Path.cwd())
    answer = send_verification_task(server, key, slug, None, project.framework)
    print(f"✓ Bench accepted the test task for {answer.get('agent') or slug}")
    if answer.get("url"):
        print(f"  Profile: {answer['url']}")
    return 0


# ── login ────────────────────────────────────────────────────────────────────────────────────

def _add_login(commands: Subparsers) -> None:
    parser = commands.add_parser("login", help="sign in (device flow); the key is stored outside the repo")
    _endpoint_option(parser)
    parser.set_defaults(run=_login)


def _login(args: argparse.Namespace) -> int:
    server = _config.base_url(args.endpoint)

    def show(url: str, code: str) -> None:
        print(f"Open {url} and approve the code {code}. Waiting…", flush=True)

    result = device_login(server, show)
    print(f"✓ Signed in{f' as {result.login}' if result.login else ''}. Key saved to {result.path}")
    print(f"  Without BENCH_ENDPOINT and BENCH_KEY, the SDK and `bench` now use {server}.")
    return 0


# ── publish ──────────────────────────────────────────────────────────────────────────────────

def _add_publish(commands: Subparsers) -> None:
    parser = commands.add_parser("publish", help="publish the capability card of bench.agent.json")
    _endpoint_option(parser)
    parser.set_defaults(run=_publish)


def _publish(args: argparse.Namespace) -> int:
    answer = publish(_config.base_url(args.endpoint), Path.cwd())
    callable_ = "takes calls through Bench" if answer.get("callable") else "takes no calls (invocation disabled)"
    print(f"✓ Published the capability card of {answer.get('agent')}; it {callable_}.")
    if answer.get("invocation_secret"):
        print("  Invocation secret (shown once; the agent verifies calls with it, see bench.verify_invocation):")
        print(f"  {answer['invocation_secret']}")
    print("  Nobody may call it until you grant them calls (dashboard, or POST .../grants).")
    return 0


# ── call ─────────────────────────────────────────────────────────────────────────────────────

def _add_call(commands: Subparsers) -> None:
    parser = commands.add_parser("call", help="call a published agent through Bench (needs the owner's grant)")
    parser.add_argument("agent", metavar="@LOGIN/SLUG")
    parser.add_argument("--input", required=True, metavar="JSON", help="the input, as JSON")
    parser.add_argument("--skill", help="the skill id to ask for (optional)")
    _endpoint_option(parser)
    parser.set_defaults(run=_call)


def _call(args: argparse.Namespace) -> int:
    output = call(_config.base_url(args.endpoint), args.agent, args.input, args.skill)
    print(output if isinstance(output, str) else json.dumps(output, indent=2, ensure_ascii=False))
    return 0


# ── benchmark ────────────────────────────────────────────────────────────────────────────────

def _add_benchmark(commands: Subparsers) -> None:
    parser = commands.add_parser("benchmark", help="run an agent on a benchmark suite; list suites; show a run")
    group = parser.add_subparsers(title="benchmark commands", metavar="ACTION")
    run = group.add_parser("run", help="run the agent on every case, submit, wait for the grades, print the run")
    run.add_argument("suite", help="suite id, e.g. grounded-research-v1")
    run.add_argument("--agent", required=True, metavar="MODULE:FUNCTION",
                     help="the agent: a function of one case input")
    run.add_argument("--repeats", type=int, metavar="K", help="runs per case (default: the suite's)")
    run.add_argument("--timeout", type=float, metavar="SECONDS",
                     help="per attempt; a slower answer is recorded as a timeout")
    run.add_argument("--wait", type=float, metavar="SECONDS", default=DEFAULT_WAIT_S,
                     help=f"how long to wait for the server to grade the run (default: {DEFAULT_WAIT_S:g})")
    run.add_argument("--agent-slug", metavar="SLUG",
                     help="Bench agent the run belongs to (default: BENCH_AGENT, then bench.agent.json)")
    run.add_argument("--suite-dir", type=Path, metavar="DIR",
                     help="a local suite folder (default: benchmarks/SUITE if present, else the server's)")
    _endpoint_option(run)
    run.set_defaults(run=_benchmark_run)
    listing = group.add_parser("list", help="suites, versions and their top results")
    _endpoint_option(listing)
    listing.set_defaults(run=_benchmark_list)
    show = group.add_parser("show", help="one run's aggregates and per-case results")
    show.add_argument("run_id", metavar="RUN_ID")
    _endpoint_option(show)
    show.set_defaults(run=_benchmark_show)
    parser.set_defaults(run=lambda args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _benchmark_run(args: argparse.Namespace) -> int:
    server, slug, key = _agent_target(args.endpoint, args.agent_slug, "--agent-slug")
    if args.repeats is not None and not 1 <= args.repeats <= 10:
        raise CliError("--repeats must be between 1 and 10")
    if args.timeout is not None and args.timeout <= 0:
        raise CliError("--timeout must be a positive number of seconds")
    if args.wait <= 0:
        raise CliError("--wait must be a positive number of seconds")
    graded = run_benchmark(args.suite, args.agent, server=server, key=key, slug=slug, repeats=args.repeats,
                           timeout=args.timeout, suite_dir=args.suite_dir, wait=args.wait)
    print("\n".join(benchmark_run_lines(graded, server)))
    return 0


def _benchmark_list(args: argparse.Namespace) -> int:
    print("\n".join(benchmark_list_lines(_config.base_url(args.endpoint))) or "No suites on this server.")
    return 0


def _benchmark_show(args: argparse.Namespace) -> int:
    server = _config.base_url(args.endpoint)
    print("\n".join(benchmark_run_lines(show_run(server, _config.api_key(None, server), args.run_id), server)))
    return 0


# ── check ────────────────────────────────────────────────────────────────────────────────────

def _add_check(commands: Subparsers) -> None:
    parser = commands.add_parser(
        "check", help="CI gate: exit 0 if a version is not worse than the one before it, 1 if worse, "
                      "2 if it has too few runs yet, 3 if the check could not be made")
    parser.error_status = EXIT_ERROR
    parser.add_argument("--agent", metavar="[LOGIN/]SLUG",
                        help="the agent (a bare slug is the key's owner's)")
    parser.add_argument("--version", metavar="NEW", help="the version to check")
    parser.add_argument("--benchmark-run", metavar="RUN_ID",
                        help="instead of a version: a benchmark run, against the agent's run before it")
    parser.add_argument("--against", metavar="OLD",
                        help="the version (or benchmark run) to compare with (default: the one before)")
    parser.add_argument("--min-runs", type=int, metavar="N",
                        help="runs each version (cases each benchmark run) needs before a verdict "
                             "(default and least: the server's, 10)")
    parser.add_argument("--json", action="store_true", help="print the server's answer as JSON")
    _endpoint_option(parser)
    parser.set_defaults(run=_check)


def _check(args: argparse.Namespace) -> int:
    server = _config.base_url(args.endpoint)
    key = _config.api_key(None, server)
    try:
        if args.benchmark_run is not None:
            if args.agent or args.version:
                raise CheckError("--benchmark-run takes neither --agent nor --version")
            answer = check_benchmark(server, key, args.benchmark_run, args.against, args.min_runs)
        elif not (args.agent and args.version):
            raise CheckError("pass --agent and --version (or --benchmark-run)")
        else:
            answer = check(server, key, args.agent, args.version, args.against, args.min_runs)
    except CheckError as error:
        print(f"bench check: {error}", file=sys.stderr)
        return EXIT_ERROR
    print(as_json(answer) if args.json else "\n".join(report_lines(answer)))
    return EXIT[answer["status"]]


# ── entry point ──────────────────────────────────────────────────────────────────────────────

COMMANDS: tuple[Callable[[Subparsers], None], ...] = (_add_init, _add_doctor, _add_test, _add_login,
                                                        _add_publish, _add_call, _add_benchmark, _add_check)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="bench", description="Bench: observability for AI agents.")
    parser.add_argument("--version", action="version", version=f"bench-observe {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    for add in COMMANDS:
        add(commands)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    try:
        return int(args.run(args))
    except (CliError, ProjectError, VerifyError, LoginError, ReuseError, BenchmarkError) as error:
        print(f"bench: {error}", file=sys.stderr)
    except OSError as error:
        print(f"bench: {error.strerror or error}: {error.filename or ''}".rstrip(": "), file=sys.stderr)
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
    return 1


if __name__ == "__main__":
    sys.exit(main())
