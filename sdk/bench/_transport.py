"""One HTTP POST, two ways: the standard library by default, httpx on request.

The standard library needs nothing and imports fast, which matters because the first import
happens on the sender thread while a busy agent is producing events. httpx (the
``bench-observe[httpx]`` extra) keeps connections alive, for a distant HTTPS server::

    bench.observe(..., sender_config=bench.SenderConfig(transport_factory=HttpxTransport))

Both report an HTTP status as a response and any network failure as an exception, which the
sender treats as retryable.
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
    """Pooled keep-alive transport (needs the ``httpx`` extra)."""

    def __init__(self) -> None:
        import httpx

        self._client: Any = httpx.Client()

    def post(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> Response:
        reply = self._client.post(url, content=body, headers=headers, timeout=timeout)
        return Response(reply.status_code, reply.headers.get("retry-after"), reply.content)

    def close(self) -> None:
        self._client.close()

