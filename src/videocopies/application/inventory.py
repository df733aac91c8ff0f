"""The server inventory control keeps for operators: which machine runs which roles.

It lives beside control (its own file), not in the working database: it describes the
machines, and must stay readable when the database is what is down.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from datetime import datetime

import attrs

from videocopies.application.errors import ApplicationError

SERVER_ROLES = ("core", "edge", "worker", "control", "postgres", "storage")
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


@attrs.define
class InvalidServer(ApplicationError):
    field: str
    reason: str


@attrs.define
class ServerExists(ApplicationError):
    host: str


def valid_host(text: str) -> str:
    """A hostname (RFC 1123 labels) or an IPv4/IPv6 address, lower-cased; else InvalidServer."""
    host = text.strip().lower()
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    if not host or len(host) > 253 or not all(_LABEL.match(label) for label in host.split(".")):
        raise InvalidServer("host", "not a hostname or IP address")
    if host.replace(".", "").isdigit():
        raise InvalidServer("host", "not a hostname or IP address")
    return host


def valid_roles(roles: Iterable[str]) -> tuple[str, ...]:
    chosen = set(roles)
    if not chosen:
        raise InvalidServer("roles", "choose at least one role")
    if unknown := chosen - set(SERVER_ROLES):
        raise InvalidServer("roles", f"unknown role {sorted(unknown)[0]!r}")
    return tuple(role for role in SERVER_ROLES if role in chosen)


def _one_line(text: object) -> str:
    return " ".join(str(text).split())[:200]


@attrs.frozen
class Server:
    host: str = attrs.field(converter=valid_host)
    roles: tuple[str, ...] = attrs.field(converter=valid_roles)
    note: str = attrs.field(default="", converter=_one_line)
    added_at: datetime | None = None
