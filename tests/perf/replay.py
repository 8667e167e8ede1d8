"""DynamoDB answers recorded once and replayed through botocore, so that a benchmark times our
side of a read (botocore's request serialisation, signing and response parsing, our item
decoding and everything after it) without the emulator that produced the answers.

`Tape.recording(client)` keeps the raw HTTP answer (status, headers, body) to every request
`client` sends, keyed by operation and request body, from botocore's `before-send` and
`response-received` events. `Tape.client()` is a DynamoDB client whose first `before-send`
handler answers each request with the recorded `AWSResponse` for the same operation and body,
so botocore parses exactly the bytes the emulator sent; a request that was never recorded is an
error, never a guess. Nothing reaches the network, and no emulator code runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from io import BytesIO
from typing import Any

import boto3
from botocore.awsrequest import AWSPreparedRequest, AWSResponse

Key = tuple[str, bytes]
"""A request: its operation (`Query`) and its body, the JSON botocore serialised."""


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


class _Raw(BytesIO):
    """The body as urllib3 would hand it to botocore (`AWSResponse.content` streams it)."""

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.read()


def _key(event_name: str, body: bytes | str | None) -> Key:
    raw = body.encode() if isinstance(body, str) else body or b""
    return event_name.rsplit(".", 1)[-1], raw


@dataclass
class Tape:
    answers: dict[Key, Answer] = field(default_factory=dict)

    @contextmanager
    def recording(self, client: Any) -> Iterator[None]:
        """Record the answers `client` gets meanwhile. The same request must get the same
        answer every time (reads of a table nobody writes), else replaying it would lie."""
        sent: list[Key] = []

        def before_send(event_name: str, request: AWSPreparedRequest, **_: Any) -> None:
            sent.append(_key(event_name, request.body))

        def received(response_dict: dict[str, Any] | None, **_: Any) -> None:
            key = sent.pop()
            if response_dict is None:
                return
            answer = Answer(response_dict["status_code"], dict(response_dict["headers"]),
                            response_dict["body"])
            known = self.answers.setdefault(key, answer)
            if (known.status, known.body) != (answer.status, answer.body):
                raise AssertionError(f"{key[0]} answered differently to the same request")

        events = client.meta.events
        events.register("before-send.dynamodb", before_send)
        events.register("response-received.dynamodb", received)
        try:
            yield
        finally:
            events.unregister("before-send.dynamodb", before_send)
            events.unregister("response-received.dynamodb", received)

    def client(self, region: str = "us-east-1") -> Any:
        """A DynamoDB client answering from the tape. moto, once imported, adds its stubber to
        every client made; outside a mock it answers nothing, and it is taken out here so that
        none of its code runs either."""
        session = boto3.session.Session(aws_access_key_id="replay", aws_secret_access_key="replay",
                                        region_name=region)
        client = session.client("dynamodb")
        try:
            from moto.core.models import botocore_stubber
        except ImportError:
            pass
        else:
            client.meta.events.unregister("before-send", botocore_stubber)
        client.meta.events.register_first("before-send.dynamodb", self._answer)
        return client

    def _answer(self, event_name: str, request: AWSPreparedRequest, **_: Any) -> AWSResponse:
        key = _key(event_name, request.body)
        answer = self.answers.get(key)
        if answer is None:
            raise LookupError(f"no recorded answer to {key[0]} {key[1][:300]!r}")
        return AWSResponse(request.url, answer.status, answer.headers, _Raw(answer.body))
