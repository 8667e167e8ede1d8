"""Outbound safety (bench_core.reuse.outbound): which addresses, names, schemes and ports an
agent endpoint may have. Names are resolved through a stub at the `socket.getaddrinfo`
boundary, so each case names exactly the addresses it is about."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from bench_core.reuse.outbound import PUBLIC_ONLY, RefusedEndpoint, check, refused_reason
from bench_core.settings import ReuseSettings

STRICT = ReuseSettings()
TESTING = ReuseSettings(allow_loopback=True)
PUBLIC_V4, PUBLIC_V6 = "93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"

REFUSED = {
    "127.0.0.1": "loopback", "127.255.0.9": "loopback", "::1": "loopback",
    "0.0.0.0": "unspecified", "::": "unspecified",
    "10.1.2.3": "private", "172.16.0.1": "private", "172.31.255.254": "private",
    "192.168.1.1": "private", "fc00::1": "private", "fd12:3456::1": "private",
    "169.254.1.1": "link-local", "fe80::1": "link-local",
    "169.254.169.254": "metadata", "fd00:ec2::254": "metadata", "169.254.170.2": "metadata",
    "100.64.0.1": "carrier-grade NAT", "100.127.255.254": "carrier-grade NAT",
    "100.100.100.200": "metadata",
    "224.0.0.1": "multicast", "239.255.255.250": "multicast", "ff02::1": "multicast",
    "240.0.0.1": "reserved", "255.255.255.255": "reserved", "192.0.2.1": "private",
    "198.18.0.1": "private", "2001:db8::1": "private",
    "::ffff:127.0.0.1": "IPv6 form of a loopback", "::ffff:10.0.0.1": "IPv6 form of a private",
    "::ffff:169.254.169.254": "IPv6 form of a cloud metadata",
    "::ffff:8.8.8.8": "IPv4 address in an IPv6 form",
    "::10.0.0.1": "IPv6 form of a private",          # IPv4-compatible (deprecated)
    "2002:a00:1::1": "IPv6 form of a private",       # 6to4 of 10.0.0.1
    "2002:7f00:1::1": "IPv6 form of a loopback",     # 6to4 of 127.0.0.1
    "2001:0:4136:e378:8000:63bf:f5ff:fffe": "IPv6 form",  # Teredo
    "64:ff9b::a9fe:a9fe": "IPv6 form of a cloud metadata",  # NAT64 of 169.254.169.254
    # the other special ranges `ipaddress` knows, one address each
    "fec0::1": "site-local", "feff:ffff::1": "site-local",   # IPv6 site-local, fec0::/10
    "0.1.2.3": "private",                                   # "this network", 0/8
    "192.0.0.8": "IETF", "192.0.0.170": "IETF",             # IETF assignments, NAT64 discovery
    "198.51.100.7": "private", "203.0.113.7": "private",    # TEST-NET-2 and -3
    "ff::1": "reserved", "4000::1": "reserved", "fe00::1": "reserved",  # IETF-reserved IPv6
    "100::1": "reserved",                                   # discard-only, 100::/64
    "2001:2::1": "private", "2001:10::1": "private",        # benchmarking, ORCHID
    "ff05::2": "multicast",                                 # site-local multicast
    "::ffff:100.64.0.1": "IPv6 form of a carrier-grade NAT",  # mapped
    "::ffff:0:a00:1": "reserved",                           # IPv4-translated (SIIT) of 10.0.0.1
    "2002:c0a8:101::1": "IPv6 form of a private",           # 6to4 of 192.168.1.1
    "2001:0:4136:e378:8000:63bf:3fff:fdd2": "IPv6 form of a private",  # Teredo, client 192.0.2.45
    "2001:0:a00:1:0:f7f7:f7f7:f7f7": "IPv6 form",           # Teredo, server 10.0.0.1
    "64:ff9b::c0a8:1": "IPv6 form of a private",            # NAT64 of 192.168.0.1
    "64:ff9b::6440:1": "IPv6 form of a carrier-grade NAT",  # NAT64 of 100.64.0.1
    "64:ff9b::7f00:1": "IPv6 form of a loopback",           # NAT64 of 127.0.0.1
    "64:ff9b:1::a00:1": "reserved",                         # local-use NAT64 (RFC 8215)
}


@pytest.mark.parametrize(("address", "why"), REFUSED.items())
def test_every_non_public_address_class_is_refused(address: str, why: str) -> None:
    reason = refused_reason(ipaddress.ip_address(address))
    assert reason is not None and why in reason


@pytest.mark.parametrize("address", REFUSED)
def test_every_non_public_address_class_is_refused_as_a_literal_url(dns: dict[str, list[str]],
                                                                  address: str) -> None:
    host = f"[{address}]" if ":" in address else address
    assert refused(f"https://{host}/") == PUBLIC_ONLY


@pytest.mark.parametrize("address", [PUBLIC_V4, "8.8.8.8", "1.1.1.1", PUBLIC_V6])
def test_public_addresses_pass(address: str) -> None:
    assert refused_reason(ipaddress.ip_address(address)) is None


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[str]]]:
    """Names the test makes up, resolving to the addresses it says; other names fail."""
    names: dict[str, list[str]] = {}

    def getaddrinfo(host: str, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        try:
            ipaddress.ip_address(host)
            addresses = [host]
        except ValueError:
            if host not in names:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known") from None
            addresses = names[host]
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                 (a, port, 0, 0) if ":" in a else (a, port)) for a in addresses]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield names


def refused(url: str, settings: ReuseSettings = STRICT) -> str:
    with pytest.raises(RefusedEndpoint) as caught:
        check(url, settings)
    return str(caught.value)


def test_a_public_https_endpoint_is_called_at_the_address_checked(
        dns: dict[str, list[str]]) -> None:
    dns["agent.example.com"] = [PUBLIC_V4, PUBLIC_V6]
    target = check("https://agent.example.com/call?x=1", STRICT)
    assert (str(target.url), target.address) == ("https://agent.example.com/call?x=1", PUBLIC_V4)


@pytest.mark.parametrize("address", ["127.0.0.1", "10.0.0.7", "169.254.169.254", "fd00:ec2::254",
                                     "::ffff:127.0.0.1", "100.64.1.1", "224.0.0.251", "::"])
def test_names_resolving_to_refused_addresses_are_refused(dns: dict[str, list[str]],
                                                          address: str) -> None:
    dns["rebound.example.com"] = [address]
    assert refused("https://rebound.example.com/") == PUBLIC_ONLY, "how it resolved is not said"


def test_one_refused_address_among_public_ones_refuses_the_name(
        dns: dict[str, list[str]]) -> None:
    dns["mixed.example.com"] = [PUBLIC_V4, "10.0.0.1"]
    assert refused("https://mixed.example.com/") == PUBLIC_ONLY


@pytest.mark.parametrize("url", ["https://127.0.0.1/", "https://[::1]/", "https://10.0.0.1/",
                                 "https://169.254.169.254/latest/meta-data/",
                                 "https://[fd00:ec2::254]/", "https://[::ffff:7f00:1]/",
                                 "https://2130706433/", "https://0x7f.1/"])
def test_literal_addresses_are_refused(url: str) -> None:
    refused(url)


def test_localhost_is_refused_unless_loopback_is_allowed_for_tests() -> None:
    assert refused("https://localhost/") == PUBLIC_ONLY
    assert check("http://localhost:8123/x", TESTING).address in ("127.0.0.1", "::1")


@pytest.mark.parametrize(("url", "why"), [
    ("http://agent.example.com/", "https://"),
    ("ftp://agent.example.com/", "https://"),
    ("https://agent.example.com:8443/", "port 8443 is not allowed"),
    ("https://agent.example.com:22/", "port 22 is not allowed"),
    ("https://user:pw@agent.example.com/", "user name or password"),
    ("https://nowhere.example.com/", "does not resolve"),
    ("not a url", "https://"),
])
def test_only_https_on_allowed_ports_is_called(dns: dict[str, list[str]], url: str,
                                               why: str) -> None:
    dns["agent.example.com"] = [PUBLIC_V4]
    assert why in refused(url)


def test_ports_and_loopback_come_from_configuration(dns: dict[str, list[str]]) -> None:
    dns["agent.example.com"] = [PUBLIC_V4]
    assert check("https://agent.example.com:8443/", ReuseSettings(
        allowed_ports=frozenset({443, 8443}))).address == PUBLIC_V4
    assert "https://" in refused("http://agent.example.com/", TESTING), \
        "the test setting relaxes nothing for public addresses"
    assert refused("http://10.0.0.1:8080/", TESTING) == PUBLIC_ONLY
