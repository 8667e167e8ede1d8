"""`bench-server`: run the local server and manage keys, for self-hosters."""

from __future__ import annotations

import argparse
import errno
import gc
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .accounts import signin_links
from .data_dir import loose_mode
from .domain.keys import new_key
from .domain.models import LOGIN_PATTERN, SLUG_PATTERN, iso
from .settings import Settings

if TYPE_CHECKING:
    from .ports.store import Store


def _settings(args: argparse.Namespace) -> Settings:
    return Settings.from_env(data_dir=Path(args.data_dir) if args.data_dir else None)


def _store(args: argparse.Namespace) -> Store:
    from .runtime.adapters import open_store

    return open_store(_settings(args))


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from .local import create_local_app, server_config

    settings = _settings(args)
    if args.host not in ("127.0.0.1", "localhost", "::1") and settings.public_url is None \
            and not settings.allowed_hosts:
        print("note: set BENCH_PUBLIC_URL (or BENCH_ALLOWED_HOSTS) to the address users reach "
              "this server at: requests for any other Host are refused (421)", file=sys.stderr)
    mode = loose_mode(settings.data_dir)
    if mode is not None:
        print(f"note: the data directory {settings.data_dir} is open to other users (mode "
              f"{mode:04o}; its files are not): `chmod 700 {settings.data_dir}` closes it",
              file=sys.stderr)
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        return _fail(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}"
                     + (" (try another port: make run PORT=8001)"
                        if exc.errno == errno.EADDRINUSE else ""))
    if settings.store == "dynamodb":  # SQLite migrates itself as it opens
        _migrated(settings, quiet=True)
    app = create_local_app(settings)
    config = server_config(app, log_level=args.log_level)
    port = sock.getsockname()[1]
    print(f"Bench is running at http://{_shown_host(args.host)}:{port}  "
          f"(data: {settings.data_dir})", flush=True)
    if signin_links.enabled(settings):
        base = settings.public_url or f"http://{_shown_host(_reachable(args.host))}:{port}"
        _remember_address(settings, base)
        _print_link(signin_links.link(base, signin_links.issue(app.state.services.store)))
    # What the process has built by now (modules, models' schemas, the app) lives as long as it
    # does: kept out of the collector's sight, each full collection under load costs a few ms
    # instead of some 60 (7% of ingest's CPU at 50-event batches, tests/perf/ingest.py).
    gc.collect()
    gc.freeze()
    uvicorn.Server(config).run(sockets=[sock])
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    """Bring the store's items to the layout this code writes: the stack does it on every
    deployment and `serve` as it starts; this runs it by hand (to the end, however long)."""
    return 0 if _migrated(_settings(args))["done"] else 1


def _migrated(settings: Settings, *, quiet: bool = False) -> dict[str, object]:
    """The store migrated (`runtime.adapters.migrate_store`), said unless `quiet` and there
    was nothing to look at."""
    from .runtime.adapters import migrate_store

    report = migrate_store(settings)
    if not quiet or report.get("scanned"):
        print("migration: " + " ".join(f"{name}={value}" for name, value in report.items()),
              flush=True)
    return report


SERVED_AT = "served-at"
"""The data directory's note of where its server was last reached, for `signin-link`."""


def _remember_address(settings: Settings, base: str) -> None:
    path = settings.data_dir / SERVED_AT
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(base)


def _remembered_address(settings: Settings) -> str | None:
    try:
        return (settings.data_dir / SERVED_AT).read_text().strip() or None
    except OSError:
        return None


def _reachable(host: str) -> str:
    """Where a browser on this machine reaches a server bound to `host` (a wildcard address
    is no address to open, and not a name the server answers to)."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)


def _print_link(url: str) -> None:
    minutes = int(signin_links.TTL.total_seconds() // 60)
    print(f"Sign in (works once, for {minutes} minutes; `bench-server signin-link` makes "
          f"another): {url}", flush=True)


def cmd_signin_link(args: argparse.Namespace) -> int:
    """A new one-time sign-in link to the server using this data directory."""
    settings = _settings(args)
    if not signin_links.enabled(settings):
        return _fail("local sign-in is off here (GitHub sign-in is set up, BENCH_PUBLIC_URL is "
                     "https, or BENCH_LOCAL_SIGNIN=0): sign in with GitHub")
    base = (args.url or settings.public_url or _remembered_address(settings)
            or "http://127.0.0.1:8000")
    _print_link(signin_links.link(base, signin_links.issue(_store(args))))
    return 0


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything says the server runs: a port in use is
    one clear line, not a traceback after "running"."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _shown_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def cmd_keys_create(args: argparse.Namespace) -> int:
    import re

    if not re.match(LOGIN_PATTERN, args.login):
        return _fail(f"invalid login {args.login!r}: letters, digits and dashes, up to 39")
    if args.agent and not re.match(SLUG_PATTERN, args.agent):
        return _fail(f"invalid agent slug {args.agent!r}: letters, digits, '.', '_', '-'")
    store = _store(args)
    raw, record = new_key(args.login.lower(), args.agent.lower() if args.agent else None,
                          args.name, now=store.clock.now())
    store.accounts.create_key(record)
    print(raw)
    return 0


def cmd_keys_list(args: argparse.Namespace) -> int:
    for k in _store(args).accounts.list_keys(args.login.lower() if args.login else None):
        state = f"revoked {k.revoked_at}" if k.revoked_at else "active"
        print(f"{k.prefix}…\t{k.login}\t{k.agent_slug or '*'}\t{k.name or ''}\t"
              f"created {k.created_at}\tlast used {k.last_used_at or 'never'}\t{state}")
    return 0


def cmd_keys_revoke(args: argparse.Namespace) -> int:
    store = _store(args)
    matches = [k for k in store.accounts.list_keys() if k.prefix.startswith(args.prefix.rstrip("…"))]
    if len(matches) != 1:
        return _fail(f"{len(matches)} keys match {args.prefix!r}: give a prefix naming one key "
                     "(see `bench-server keys list`)")
    if not store.accounts.revoke_key(matches[0].key_hash, iso(store.clock.now())):
        return _fail(f"key {matches[0].prefix}… is already revoked")
    print(f"revoked {matches[0].prefix}…")
    return 0


def _fail(message: str) -> int:
    print(f"bench-server: {message}", file=sys.stderr)
    return 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench-server", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    data = argparse.ArgumentParser(add_help=False)
    data.add_argument("--data-dir", help="where the SQLite file lives (env BENCH_DATA_DIR, "
                                         "default ./.bench)")

    serve = sub.add_parser("serve", parents=[data], help="run the local server")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--log-level", default="warning")
    serve.set_defaults(func=cmd_serve)

    migrate = sub.add_parser("migrate", parents=[data],
                             help="rewrite stored items in the layout this version writes "
                                  "(the stack does it on every deployment)")
    migrate.set_defaults(func=cmd_migrate)

    link = sub.add_parser("signin-link", parents=[data],
                          help="print a one-time link to sign in to the local server")
    link.add_argument("--url", help="where the server is reached (default BENCH_PUBLIC_URL, "
                                    "else where `serve` last ran on this data directory)")
    link.set_defaults(func=cmd_signin_link)

    keys = sub.add_parser("keys", help="create, list and revoke API keys").add_subparsers(
        dest="keys_command", required=True)
    create = keys.add_parser("create", parents=[data], help="print a new key (shown once)")
    create.add_argument("--login", required=True, help="the owner's login")
    create.add_argument("--agent", help="bind the key to one agent (an ingest-only bka_ key)")
    create.add_argument("--name", help="a label to recognise the key by")
    create.set_defaults(func=cmd_keys_create)
    listing = keys.add_parser("list", parents=[data], help="list keys (never the keys)")
    listing.add_argument("--login")
    listing.set_defaults(func=cmd_keys_list)
    revoke = keys.add_parser("revoke", parents=[data], help="revoke a key by its prefix")
    revoke.add_argument("prefix", help="the key's first characters, as `keys list` shows")
    revoke.set_defaults(func=cmd_keys_revoke)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
