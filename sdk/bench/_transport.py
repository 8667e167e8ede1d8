"""One HTTP POST, two ways: the standard library by default, httpx when it is installed.

httpx (the ``bench-observe[httpx]`` extra) keeps connections alive and speaks HTTP/2 through
proxies; the standard library needs nothing. Both report an HTTP status as a response and any
network failure as an exception, which the sender treats as retryable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Protocol


@dataclass(frozen=True)
class Response:
    status: int
    retry_after: Optional[str]
    body: bytes


class Transport(Protocol):
    def post(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> Response: ...

    def close(self) -> None: ...


class UrllibTransport:
    """Standard-library transport; honours ``HTTPS_PROXY``/``NO_PROXY`` like urllib does."""

    def post(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> Response:
        import urllib.error
        import urllib.request

        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as reply:  # noqa: S310 - URL is the configured endpoint
                return Response(reply.status, reply.headers.get("Retry-After"), reply.read())
        except urllib.error.HTTPError as error:
            with error:
                return Response(error.code, error.headers.get("Retry-After"), error.read())

    def close(self) -> None:
        """Nothing to release: urllib opens one connection per request."""


class HttpxTransport:
    """Pooled keep-alive transport, used when httpx is importable."""

    def __init__(self) -> None:
        import httpx

        self._client: Any = httpx.Client()

    def post(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> Response:
        reply = self._client.post(url, content=body, headers=headers, timeout=timeout)
        return Response(reply.status_code, reply.headers.get("retry-after"), reply.content)

    def close(self) -> None:
        self._client.close()


def default_transport() -> Transport:
    """httpx if installed, else the standard library; called on the sender thread, not at import."""
    try:
        return HttpxTransport()
    except ImportError:
        return UrllibTransport()
