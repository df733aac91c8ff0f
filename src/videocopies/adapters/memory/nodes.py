"""Node identities kept in memory, with the same promises as the PostgreSQL registry."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

import attrs

from videocopies.application.ports import Node, NodeExists


class InMemoryNodeRegistry:
    def __init__(self, on_change: Callable[[], None] | None = None) -> None:
        self._nodes: dict[str, Node] = {}
        self.last_contact: dict[str, datetime] = {}
        self._on_change = on_change

    async def add(self, node: Node) -> None:
        if any(known.name == node.name and known.live for known in self._nodes.values()):
            raise NodeExists(node.name)
        self._nodes[node.node_id] = node
        self._changed()

    async def revoke(self, name: str, at: datetime) -> bool:
        for node in list(self._nodes.values()):
            if node.name == name and node.live:
                self._nodes[node.node_id] = attrs.evolve(node, revoked_at=at)
                self._changed()
                return True
        return False

    async def get(self, node_id: str) -> Node | None:
        return self._nodes.get(node_id)

    async def live(self) -> Sequence[Node]:
        return [node for node in self._nodes.values() if node.live]

    async def seen(self, last_contact: Mapping[str, datetime]) -> None:
        self.last_contact.update(last_contact)

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()
