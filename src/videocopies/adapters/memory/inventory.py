"""The server inventory in memory, for tests."""

from __future__ import annotations

from collections.abc import Sequence

from videocopies.application.inventory import Server, ServerExists


class InMemoryServerInventory:
    def __init__(self) -> None:
        self._servers: dict[str, Server] = {}

    async def servers(self) -> Sequence[Server]:
        return sorted(self._servers.values(), key=lambda server: server.host)

    async def add(self, server: Server) -> None:
        if server.host in self._servers:
            raise ServerExists(server.host)
        self._servers[server.host] = server

    async def remove(self, host: str) -> bool:
        return self._servers.pop(host, None) is not None

