"""Which names this server answers to, and who a request really comes from.

- A request whose `Host` is not one of this deployment's names is refused (421): a page on
  another site whose name resolves to us (DNS rebinding) must not be served our pages, cookies
  or sign-in. The names: loopback ones, the public URL's host, the names a deployer lists,
  and under API Gateway the domain it routed the request by.
- The client's address is the socket's peer, unless that peer is a proxy the deployer trusts:
  then the nearest address in `X-Forwarded-For` that is not itself a trusted proxy. Nobody
  else's forwarding header counts, so it cannot buy a fresh rate-limit bucket.
"""

from __future__ import annotations

import functools
import ipaddress
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def host_name(host_header: str) -> str:
    """`Host` without its port, lowercased; `[::1]:8000` is `::1`."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def is_loopback_name(name: str) -> bool:
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@functools.lru_cache(maxsize=64)
def allowed_names(public_url: str | None, configured: tuple[str, ...],
                  gateway_domain: str | None = None) -> frozenset[str]:
    """The names besides loopback ones that this deployment answers to (asked on every
    request with the same few arguments, so remembered)."""
    names = {host_name(n) for n in configured if n.strip()}
    if public_url:
        names.add((urlsplit(public_url).hostname or "").lower())
    if gateway_domain:
        names.add(host_name(gateway_domain))
    return frozenset(names - {""})


def host_allowed(host_header: str | None, names: frozenset[str]) -> bool:
    if not host_header:
        return False
    name = host_name(host_header)
    return is_loopback_name(name) or name in names


def parse_networks(text: str) -> tuple[Network, ...]:
    """`BENCH_TRUSTED_PROXIES`: addresses or CIDR blocks, comma separated. ValueError for
    anything else, so a typo stops the server instead of trusting nobody silently."""
    return tuple(ipaddress.ip_network(part.strip(), strict=False)
                 for part in text.split(",") if part.strip())


def _trusted(address: str, proxies: tuple[Network, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in proxies)


def client_address(peer: str | None, forwarded_for: str | None,
                   proxies: tuple[Network, ...]) -> str:
    """Who sent the request (see the module docstring); "unknown" without a peer."""
    if peer is None:
        return "unknown"
    if not forwarded_for or not _trusted(peer, proxies):
        return peer
    hops = [h.strip() for h in forwarded_for.split(",") if h.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, proxies):
            return hop
    return hops[0] if hops else peer
