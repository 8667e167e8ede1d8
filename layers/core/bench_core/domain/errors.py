"""Domain errors: each carries the HTTP status the edge answers with, so routers stay thin."""

from __future__ import annotations

from typing import Any


class BenchError(Exception):
    """A failure the caller can act on; rendered as `{"error": message, "detail": [...]}`."""

    status = 400

    def __init__(self, message: str, detail: list[Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail or []
        self.headers = headers or {}


class BadRequest(BenchError):
    status = 400


class Unauthorized(BenchError):
    status = 401


class Forbidden(BenchError):
    status = 403


class NotFound(BenchError):
    status = 404


class Conflict(BenchError):
    status = 409


class PayloadTooLarge(BenchError):
    status = 413


class Invalid(BenchError):
    status = 422


class TooManyRequests(BenchError):
    status = 429


class TooManyAgents(Forbidden):
    """An account with as many agents as one may have tried to make another (403: sending it
    again will not change that). Raised by the store, which counts atomically."""

    def __init__(self, login: str, most: int) -> None:
        super().__init__(
            f"account {login} has {most} agents, the most one account may have on this server "
            "(BENCH_MAX_AGENTS_PER_ACCOUNT)",
            [{"loc": ["agent"], "msg": f"at most {most} agents per account"}])
