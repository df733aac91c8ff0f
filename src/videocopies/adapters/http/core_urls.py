"""Which URLs of a core a node may talk to, and a core may send its nodes to.

Every call to core carries the node's token, and edge's calls carry users' updates: over
plain HTTP anyone on the path reads them. Plain HTTP is for a core on the same machine
(loopback) unless an operator says otherwise; a relocation (a deploy) sends nodes only to
https hosts the operator listed, or to loopback.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection
from urllib.parse import urlsplit


class PlainHttpRefused(ValueError):
    """A node was pointed at a core elsewhere over plain HTTP."""


def is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost":  # not *.localhost: a resolver may send those names out to DNS
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def plain_http_elsewhere(url: str) -> bool:
    """`url` is plain HTTP to a host that is not this machine."""
    parts = urlsplit(url)
    return parts.scheme == "http" and not is_loopback(parts.hostname or "")


def check_core_url(url: str, allow_plain_http: bool) -> None:
    if plain_http_elsewhere(url) and not allow_plain_http:
        raise PlainHttpRefused(
            f"core at {url} is not on this machine and plain HTTP would carry this node's token (and users' "
            "updates) in clear: use https (VIDEOCOPIES_CORE_CA names a private CA), or set "
            "VIDEOCOPIES_ALLOW_PLAIN_HTTP=1 on a network you trust"
        )


def relocation_refusal(url: str, allowed_hosts: Collection[str]) -> tuple[int, str] | None:
    """Why core may not send its nodes to `url` (an HTTP status and a reason), or None."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if is_loopback(host):
        return None
    if parts.scheme != "https":
        return 422, "nodes move only to https, or to plain http on this machine (loopback)"
    if host not in allowed_hosts:
        return 403, f"{host} is not among the hosts nodes may move to (VIDEOCOPIES_RELOCATION_HOSTS)"
    return None


def hosts_from(value: str) -> frozenset[str]:
    """VIDEOCOPIES_RELOCATION_HOSTS: host names separated by commas or spaces."""
    return frozenset(host.strip().lower() for host in value.replace(",", " ").split() if host.strip())
