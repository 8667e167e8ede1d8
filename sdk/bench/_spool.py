"""Events still undelivered when the process exits wait on disk for the next process.

Where: ``BENCH_SPOOL_DIR`` (or ``observe(spool_dir=...)``), else a per-user cache directory
(``$XDG_CACHE_HOME/bench/spool`` or ``~/.cache/bench/spool``; ``~/Library/Caches/bench/spool`` on
macOS; ``%LOCALAPPDATA%\\bench\\Cache\\spool`` on Windows; ``/tmp/bench/spool`` in AWS Lambda).
The directory is 0700 and its files 0600; a directory another user owns or others may write to
is never read or written. Where nothing can be written the spool is silently off.

How much: 50 MB across the directory (``BENCH_SPOOL_MAX_MB``, ``observe(spool_max_mb=...)``; 0
turns the spool off). Over the bound the OLDEST events are kept and the newest dropped, as the
in-memory queue does: what waited longest is what the server misses longest, and a writer never
deletes another process's file. What is dropped is counted and reported to the server as
``dropped`` with the file's first batch.

The files: one per exit, named ``<key id>-<time ns>-<random>.jsonl`` where the key id is a hash
of the ingest URL and the API key (the key itself is never written anywhere). The first line is
a header (the batch head the events were sent under, the drop count, the number of events); then
one encoded event per line. A file is written to a hidden temporary name, fsynced and renamed,
so a crash never leaves a half-written spool; a file that cannot be read is dropped with one
warning. A process claims a file by renaming it to ``<name>.<host>-<pid>.claim`` (only one
rename succeeds, so two processes starting at once never both send it); the claim is deleted
once its events are delivered, and a claim whose process has died is taken over.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

logger = logging.getLogger("bench")

DEFAULT_MAX_MB = 50.0
SUFFIX = ".jsonl"
CLAIMED = ".claim"
STALE_TEMP_S = 3600.0
"""A temporary file older than this was left by a writer that crashed: removed."""
UNVERIFIABLE_CLAIM_S = 86_400.0
"""A claim whose process cannot be checked (another host, no ``kill(pid, 0)``) is taken over
after this long; an event sent twice counts once."""
_held: set[str] = set()
"""Claims this process holds (two agents of one process may share a key id)."""


@dataclass
class Claim:
    """A spool file this process took; deleted when its last batch is settled."""

    path: Path
    stamp: int
    pending: int = 0


@dataclass(frozen=True)
class Loaded:
    meta: dict[str, Any]
    events: list[bytes]
    dropped: int


def default_directory() -> Path:
    """The platform's per-user cache directory for the spool (``/tmp`` in AWS Lambda)."""
    if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        return Path("/tmp/bench/spool")  # noqa: S108 - Lambda's only writable, private directory
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(_home() / "AppData" / "Local")
        return Path(base) / "bench" / "Cache" / "spool"
    if sys.platform == "darwin":
        return _home() / "Library" / "Caches" / "bench" / "spool"
    return Path(os.environ.get("XDG_CACHE_HOME") or _home() / ".cache") / "bench" / "spool"


def _home() -> Path:
    home = os.path.expanduser("~")
    if home == "~":
        raise RuntimeError("no home directory")
    return Path(home)


def open_spool(url: str, api_key: str, directory: Optional[str], max_mb: Optional[float]) -> Optional[Spool]:
    """The spool for one ingest URL and key, or None when turned off. Touches no file."""
    if max_mb is None:
        try:
            max_mb = float(os.environ.get("BENCH_SPOOL_MAX_MB") or DEFAULT_MAX_MB)
        except ValueError:
            max_mb = DEFAULT_MAX_MB
    if max_mb <= 0:
        return None
    chosen = directory or os.environ.get("BENCH_SPOOL_DIR") or None
    key_id = hashlib.sha256(f"{url}\n{api_key}".encode()).hexdigest()[:32]
    return Spool(Path(chosen) if chosen else None, int(max_mb * 1_000_000), key_id)


class Spool:
    """The spool files of one ingest URL and key (others' are only counted against the bound)."""

    def __init__(self, directory: Optional[Path], max_bytes: int, key_id: str) -> None:
        self._directory = directory
        self._max_bytes = max_bytes
        self._key_id = key_id

    # ── reading: the next process ──

    def waiting(self) -> list[str]:
        """Files of this key id to send, oldest first: unclaimed ones and dead processes' claims."""
        directory = self._safe_directory(create=False)
        if directory is None:
            return []
        try:
            names = os.listdir(directory)
        except OSError:
            return []
        prefix = self._key_id + "-"
        return sorted(n for n in names if n.startswith(prefix) and (
            n.endswith(SUFFIX) or (n.endswith(CLAIMED) and self._abandoned(directory / n))))

    def claim(self, name: str) -> Optional[Claim]:
        """Take ``name`` for this process; None if another process took it first."""
        directory = self._safe_directory(create=False)
        if directory is None:
            return None
        original = name.split(SUFFIX)[0] + SUFFIX
        claimed = directory / f"{original}.{_host()}-{os.getpid()}{CLAIMED}"
        try:
            os.rename(directory / name, claimed)
            os.utime(claimed)
        except OSError:
            return None
        _held.add(claimed.name)
        try:
            stamp = int(original.split("-")[1])
        except (IndexError, ValueError):
            stamp = 0
        return Claim(claimed, stamp)

    def load(self, claim: Claim) -> Optional[Loaded]:
        """The claimed file's events; None (file dropped, one warning) if it cannot be read."""
        try:
            loaded = _parse(claim.path.read_bytes())
        except (OSError, ValueError, TypeError, KeyError) as exc:
            self.release(claim)
            _warn_unreadable(f"bench: dropped an unreadable spool file {claim.path.name} ({exc})")
            return None
        return loaded

    def release(self, claim: Claim) -> None:
        """Its events are delivered (or given up): delete the claim."""
        _held.discard(claim.path.name)
        _remove(claim.path)

    # ── writing: the exiting process ──

    def location(self) -> str:
        try:
            return str(self._directory or default_directory())
        except RuntimeError:
            return "(no directory)"

    def write(self, stamp: int, meta: dict[str, Any], events: list[bytes], dropped: int,
              replacing: Optional[Claim] = None) -> Optional[tuple[int, int]]:
        """Spool ``events`` (oldest first) under ``meta``: (kept, dropped for room), or None if
        nothing could be written (no usable directory).

        ``stamp`` orders the file among the others: the rest of a claimed file (``replacing``,
        deleted once written) keeps its place in line; a claimed file that cannot be rewritten
        stays as it is, for a later process to take over. Nothing is written for no events.
        """
        if not events:
            if replacing is not None:
                self.release(replacing)
            return 0, 0
        directory = self._safe_directory(create=True)
        if directory is None:
            return None
        room = self._max_bytes - _used(directory) + (_size(replacing.path) if replacing is not None else 0)
        size, keep = len(_header(meta, len(events), 10**15)) + 1, 0
        for event in events:
            size += len(event) + 1
            if size > room:
                break
            keep += 1
        if keep:
            header = _header(meta, keep, dropped + len(events) - keep)
            name = f"{self._key_id}-{stamp:020d}-{secrets.token_hex(4)}{SUFFIX}"
            temporary = directory / f".{name}.tmp"
            try:
                _write_synced(temporary, b"".join((header, b"\n", b"\n".join(events[:keep]), b"\n")))
                os.replace(temporary, directory / name)
            except OSError as exc:
                _remove(temporary)
                logger.debug("bench: cannot write the spool in %s: %r", directory, exc)
                return None
            _sync_directory(directory)
        if replacing is not None and keep:
            self.release(replacing)
        return keep, len(events) - keep

    # ── the directory ──

    def _safe_directory(self, create: bool) -> Optional[Path]:
        """The directory if it is this user's alone (created 0700 if asked), else None."""
        try:
            directory = self._directory or default_directory()
            if create:
                directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            info = directory.stat()
        except (OSError, RuntimeError):  # RuntimeError: no home directory to expand ~ to
            return None
        if hasattr(os, "getuid"):
            if info.st_uid != os.getuid():
                return None
            if info.st_mode & 0o077:
                if not create:
                    return None
                try:
                    directory.chmod(0o700)
                except OSError:
                    return None
        return directory

    def _abandoned(self, path: Path) -> bool:
        """A claim held by no living process of this host (or unverifiable and old)."""
        if path.name in _held:
            return False
        owner = path.name[: -len(CLAIMED)].rsplit(".", 1)[-1]
        host, _, pid = owner.rpartition("-")
        if host == _host() and pid.isdigit() and hasattr(os, "getuid"):
            return int(pid) == os.getpid() or not _alive(int(pid))
        try:
            return time.time() - path.stat().st_mtime > UNVERIFIABLE_CLAIM_S
        except OSError:
            return False


def _header(meta: dict[str, Any], events: int, dropped: int) -> bytes:
    head = {"bench_spool": 1, "events": events, "dropped": dropped, "meta": meta}
    return json.dumps(head, separators=(",", ":"), default=str).encode()


def _parse(data: bytes) -> Loaded:
    """A spool file's contents; ValueError (or KeyError/TypeError) if it is not one, whole."""
    lines = data.split(b"\n")
    if lines[-1] != b"":
        raise ValueError("cut short")
    head = json.loads(lines[0])
    events = lines[1:-1]
    meta, dropped = head["meta"], head["dropped"]
    if head["bench_spool"] != 1 or head["events"] != len(events):
        raise ValueError("not a spool file of this version, or cut short")
    if not (isinstance(meta, dict) and meta.get("agent_slug") and isinstance(dropped, int) and dropped >= 0):
        raise ValueError("bad header")
    if not all(isinstance(e, dict) for e in json.loads(b"[" + b",".join(events) + b"]")):
        raise ValueError("an event is not an object")
    return Loaded(meta, events, dropped)


def _used(directory: Path) -> int:
    """Bytes the spool holds (every key's files); stale temporary files are removed."""
    total = 0
    now = time.time()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0
    for entry in entries:
        try:
            info = entry.stat()
        except OSError:
            continue
        if entry.name.endswith(".tmp"):
            if now - info.st_mtime > STALE_TEMP_S:
                _remove(Path(entry.path))
        elif entry.name.endswith((SUFFIX, CLAIMED)):
            total += info.st_size
    return total


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _write_synced(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_directory(directory: Path) -> None:
    """Make the rename durable (POSIX); best effort."""
    if sys.platform == "win32":
        return
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, owned by someone else
    return True


def _host() -> str:
    import platform

    return hashlib.sha256(platform.node().encode()).hexdigest()[:8]


_warned_unreadable = False


def _warn_unreadable(message: str) -> None:
    """One warning per process, however many files were unreadable."""
    global _warned_unreadable
    logger.log(logging.DEBUG if _warned_unreadable else logging.WARNING, message)
    _warned_unreadable = True
