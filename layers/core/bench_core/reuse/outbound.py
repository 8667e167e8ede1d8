"""The only way Bench reaches out to an agent endpoint: public https addresses, nothing else.

An owner names the endpoint, so the URL is untrusted input aimed at Bench's own network. Every
hop of every call (and publishing) resolves the name and refuses it if *any* address it has is
loopback, private (RFC 1918, fc00::/7), link-local, IPv6 site-local (fec0::/10: deprecated, but
routed inside some networks, and `ipaddress` counts it as global), carrier-grade NAT
(100.64/10), multicast, unspecified, reserved or otherwise not global, a cloud metadata address,
or an IPv4 address wrapped in IPv6 (mapped, compatible, 6to4, Teredo, NAT64). The connection then goes to the
very address that was checked, with the name kept for the Host header and for TLS (SNI and
certificate check), so a DNS answer that changes between check and connect (rebinding) cannot
redirect it. Redirects are followed by hand, each hop checked again. Only https on an allowed
port (443 unless configured) is called; proxies from the environment are ignored.

`allow_loopback` (a test-only setting) lets loopback addresses through, over http, on any port.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from ..settings import ReuseSettings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA = frozenset(map(ipaddress.ip_address, (
    "169.254.169.254", "fd00:ec2::254",  # AWS (IMDS, IPv4 and IPv6), also GCP's and Azure's IMDS
    "169.254.170.2", "169.254.170.23",   # ECS task metadata, EKS pod identity
    "168.63.129.16",                     # Azure's wire server: a public address
    "100.100.100.200")))                 # Alibaba Cloud
CARRIER_NAT = ipaddress.ip_network("100.64.0.0/10")
IETF_ASSIGNMENTS = ipaddress.ip_network("192.0.0.0/24")
"""Not globally reachable (RFC 6890); Python before 3.12.4 counts only parts of it as private."""
NAT64 = ipaddress.ip_network("64:ff9b::/96")
REDIRECTS = frozenset({301, 302, 303, 307, 308})
PUBLIC_ONLY = "Bench calls endpoints on public addresses only"
"""Why a name that resolves to a refused address is refused; the address is not said."""


class RefusedEndpoint(Exception):
    """The endpoint may not be called. The message says what is wrong with the URL, but never
    the name or how it resolved: it may end up in a caller's answer or a public task."""


class OutboundTimeout(Exception):
    """The endpoint did not answer in time."""


class OutboundFailed(Exception):
    """The endpoint could not be reached or its answer could not be taken."""


@dataclass(frozen=True)
class Answer:
    status: int
    content_type: str
    body: bytes


def refused_reason(ip: IPAddress) -> str | None:
    """Why Bench may not connect to `ip`; None for a public address."""
    if ip in METADATA:
        return "a cloud metadata address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_unspecified:
        return "the unspecified address"
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_ipv4(ip)
        if inner is not None:
            why = refused_reason(inner)
            return f"an IPv6 form of {why}" if why else "an IPv4 address in an IPv6 form"
    if ip.is_link_local:
        return "a link-local address"
    if isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local:
        return "a site-local address"
    if ip.is_multicast:
        return "a multicast address"
    if ip in CARRIER_NAT:
        return "a carrier-grade NAT address"
    if ip in IETF_ASSIGNMENTS:
        return "an IETF protocol assignment"
    if ip.is_reserved:
        return "a reserved address"
    if ip.is_private:
        return "a private address"
    if not ip.is_global:
        return "not a public address"
    return None


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in NAT64 or int(ip) >> 32 == 0:  # NAT64, and the deprecated IPv4-compatible ::a.b.c.d
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


@dataclass(frozen=True)
class Target:
    """A checked hop: the URL as named, and the address to connect to instead of its name."""

    url: httpx.URL
    address: str


def check(url: str | httpx.URL, settings: ReuseSettings) -> Target:
    """The address `url` may be called at, after resolving its name; RefusedEndpoint if none."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise RefusedEndpoint("not a valid URL") from exc
    if parsed.scheme not in ("https", "http") or not parsed.host:
        raise RefusedEndpoint("the endpoint must be an https:// URL")
    if parsed.userinfo:
        raise RefusedEndpoint("the endpoint URL may not carry a user name or password")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    addresses = _resolve(parsed.host, port)
    loopback = all(ip.is_loopback for ip in addresses)
    for ip in addresses:
        if refused_reason(ip) and not (settings.allow_loopback and ip.is_loopback):
            raise RefusedEndpoint(PUBLIC_ONLY)
    if not (settings.allow_loopback and loopback):
        if parsed.scheme != "https":
            raise RefusedEndpoint("the endpoint must be an https:// URL")
        if port not in settings.allowed_ports:
            allowed = ", ".join(map(str, sorted(settings.allowed_ports)))
            raise RefusedEndpoint(f"port {port} is not allowed (allowed: {allowed})")
    return Target(parsed, str(addresses[0]))


def _resolve(host: str, port: int) -> list[IPAddress]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise RefusedEndpoint("its name does not resolve") from exc
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    if not addresses:
        raise RefusedEndpoint("its name does not resolve")
    return addresses


@functools.cache
def _tls() -> ssl.SSLContext:
    """One certificate store for every call (loading it takes a while)."""
    return httpx.create_ssl_context()


Signer = Callable[[str, bytes], dict[str, str]]
"""The signature headers of a request to a path (and query) with a body."""


def post(url: str, body: bytes, headers: dict[str, str], settings: ReuseSettings,
         sign: Signer | None = None) -> Answer:
    """POST `body` to the endpoint and take its answer, at most `max_response_bytes` of it,
    within `timeout_s` overall; redirects are followed (each hop checked) up to
    `max_redirects`, 307/308 with the body, the others as a GET. Each hop to the endpoint's
    own origin is signed for its own path by `sign`; a hop to another origin is not."""
    deadline = time.monotonic() + settings.timeout_s
    method, content = "POST", body
    current: str | httpx.URL = url
    origin = _origin(httpx.URL(url)) if sign is not None else None
    for _ in range(settings.max_redirects + 1):
        target = check(current, settings)
        signed = headers
        if sign is not None and _origin(target.url) == origin:
            signed = {**headers, **sign(target.url.raw_path.decode("ascii"), content)}
        answer, location = _hop(target, method, content, signed, settings, deadline)
        if location is None:
            return answer
        current = target.url.join(location)
        if answer.status not in (307, 308):
            method, content = "GET", b""
    raise OutboundFailed(f"more than {settings.max_redirects} redirects")


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


def _hop(target: Target, method: str, content: bytes, headers: dict[str, str],
         settings: ReuseSettings, deadline: float) -> tuple[Answer, str | None]:
    """One request to the checked address; the answer, and where it redirects to if it does.
    A client per hop: connections are never shared between names (each has its own TLS)."""
    pinned = target.url.copy_with(host=target.address)
    timeout = httpx.Timeout(max(0.05, deadline - time.monotonic()))
    host = target.url.netloc.decode("ascii")
    try:
        with httpx.Client(verify=_tls(), trust_env=False, follow_redirects=False,
                          timeout=timeout) as client, \
                client.stream(method, pinned, content=content or None,
                              headers={**headers, "Host": host},
                              extensions={"sni_hostname": target.url.host}) as response:
            location = response.headers.get("location")
            if response.status_code in REDIRECTS and location:
                return Answer(response.status_code, "", b""), location
            return Answer(response.status_code, response.headers.get("content-type", ""),
                          _read(response, settings, deadline)), None
    except httpx.TimeoutException as exc:
        raise OutboundTimeout(f"no answer within {settings.timeout_s:g} s") from exc
    except httpx.HTTPError as exc:
        raise OutboundFailed(f"could not reach the endpoint ({type(exc).__name__})") from exc


def _read(response: httpx.Response, settings: ReuseSettings, deadline: float) -> bytes:
    """The body, refused past the size cap or the deadline (a slow drip never ends a read)."""
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > settings.max_response_bytes:
            raise OutboundFailed(f"the answer is over {settings.max_response_bytes} bytes")
        if time.monotonic() > deadline:
            raise OutboundTimeout(f"no complete answer within {settings.timeout_s:g} s")
        chunks.append(chunk)
    return b"".join(chunks)
