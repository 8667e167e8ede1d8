"""HTTP caching for public, anonymous responses: one `Reply` shape, strong ETags, 304s.

Badges, embeds and OG images are fetched by caches (GitHub's image proxy, CDNs, browsers) far
more often than they change; an ETag lets a cache revalidate for the price of a 304. Standard
library only, so the badge function can import it on its cold path.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

PUBLIC_60 = "public, max-age=60, s-maxage=60"
PRIVATE = "private, no-store"


@dataclass(frozen=True)
class Reply:
    """A framework-free response, so FastAPI routes and a bare Lambda handler share one code path."""

    status: int
    body: bytes
    media_type: str
    headers: dict[str, str] = field(default_factory=dict)


def etag_of(body: bytes) -> str:
    return '"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"'


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """RFC 9110 weak comparison, as `If-None-Match` requires: `W/` prefixes are ignored."""
    if not if_none_match:
        return False
    if if_none_match.strip() == "*":
        return True
    wanted = etag.removeprefix("W/")
    return any(tag.strip().removeprefix("W/") == wanted for tag in if_none_match.split(","))


def cacheable(reply: Reply, if_none_match: str | None, cache_control: str = PUBLIC_60) -> Reply:
    """`reply` with its ETag and caching headers, or a bodiless 304 when the client's copy is
    current. Error statuses get the headers too: a "not found" badge is as cacheable as any."""
    etag = etag_of(reply.body)
    headers = {**reply.headers, "ETag": etag, "Cache-Control": cache_control}
    if reply.status == 200 and etag_matches(if_none_match, etag):
        return Reply(304, b"", reply.media_type, headers)
    return Reply(reply.status, reply.body, reply.media_type, headers)
