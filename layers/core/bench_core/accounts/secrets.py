"""The two secrets sign-in needs: the key that signs sessions (and every other token), and
GitHub's OAuth client secret.

Where they come from, first match wins:
1. the environment (`BENCH_SESSION_SECRET`, `BENCH_GITHUB_CLIENT_SECRET`): local runs;
2. an SSM SecureString named by `BENCH_SESSION_SECRET_PARAMETER` /
   `BENCH_GITHUB_CLIENT_SECRET_PARAMETER`, read through Powertools Parameters (cached for
   `POWERTOOLS_PARAMETERS_MAX_AGE` seconds, so a rotation takes effect without a deploy): AWS;
3. for the session secret on the embedded store only: a random secret the server writes once to
   `<data dir>/session-secret` (mode 0600), so sessions survive restarts and `make run` needs no
   setup.
"""

from __future__ import annotations

import os
import secrets
import threading

from ..data_dir import private_directory
from ..domain.errors import BenchError
from ..settings import Settings

LOCAL_SECRET_FILE = "session-secret"
MIN_SECRET_CHARS = 32


class SecretUnavailable(BenchError):
    """Sign-in is not configured (or its secret cannot be read): a deployment problem."""

    status = 503


def _parameter(name: str) -> str:
    """An SSM SecureString through Powertools (imported here: only AWS deployments pay for it)."""
    from aws_lambda_powertools.utilities import parameters

    try:
        return str(parameters.get_parameter(name, decrypt=True))
    except Exception as exc:  # missing parameter, no permission, no network: all the same here
        raise SecretUnavailable(f"cannot read the SSM parameter {name}") from exc


class Secrets:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._local: bytes | None = None
        self._lock = threading.Lock()

    def session_key(self) -> bytes:
        accounts = self.settings.accounts
        if accounts.session_secret:
            value = accounts.session_secret
        elif accounts.session_secret_parameter:
            value = _parameter(accounts.session_secret_parameter)
        elif self.settings.embedded_store:
            return self._local_secret()
        else:
            raise SecretUnavailable("no session secret: set BENCH_SESSION_SECRET_PARAMETER")
        if len(value) < MIN_SECRET_CHARS:
            raise SecretUnavailable(f"the session secret is shorter than {MIN_SECRET_CHARS} "
                                    "characters")
        return value.encode()

    def github_client_secret(self) -> str:
        accounts = self.settings.accounts
        if accounts.github_client_secret:
            return accounts.github_client_secret
        if accounts.github_client_secret_parameter:
            return _parameter(accounts.github_client_secret_parameter)
        raise SecretUnavailable("GitHub sign-in is not configured")

    def _local_secret(self) -> bytes:
        with self._lock:
            if self._local is None:
                path = self.settings.data_dir / LOCAL_SECRET_FILE
                private_directory(path.parent)
                try:
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                except FileExistsError:
                    self._local = path.read_bytes().strip()
                else:
                    with os.fdopen(fd, "w") as handle:
                        handle.write(secrets.token_urlsafe(48))
                    self._local = path.read_bytes().strip()
            return self._local
