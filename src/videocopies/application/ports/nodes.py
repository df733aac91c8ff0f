"""The nodes that talk to core, each with its own token and scopes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol

import attrs

from videocopies.application.errors import ApplicationError


@attrs.frozen
class Node:
    node_id: str
    name: str
    role: str
    scopes: frozenset[str]
    secret_sha256: str
    created_at: datetime
    revoked_at: datetime | None = None

    @property
    def live(self) -> bool:
        return self.revoked_at is None


@attrs.define
class NodeExists(ApplicationError):
    name: str


class NodeRegistry(Protocol):
    async def add(self, node: Node) -> None:
        """Raises NodeExists when a live node already has this name."""
        ...
    async def revoke(self, name: str, at: datetime) -> bool: ...
    async def get(self, node_id: str) -> Node | None: ...
    async def live(self) -> Sequence[Node]: ...
    async def seen(self, last_contact: Mapping[str, datetime]) -> None: ...
