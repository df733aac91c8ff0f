"""Node identities in PostgreSQL. Adding or revoking a node is announced with NOTIFY in
the same transaction, so every core reloads its copy at once (these are rare writes, made
by an operator's command, so the NOTIFY lock they take costs nothing)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

import psycopg
from psycopg_pool import AsyncConnectionPool

from videocopies.adapters.postgres.pool import fetch_rows
from videocopies.adapters.postgres.queries import sql
from videocopies.application.ports import Node, NodeExists

CHANNEL = "videocopies_nodes"


def _node(row: dict) -> Node:
    return Node(
        row["node_id"], row["name"], row["role"], frozenset(row["scopes"]), row["secret_sha256"],
        row["created_at"], row["revoked_at"],
    )


class PostgresNodeRegistry:
    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool

    async def add(self, node: Node) -> None:
        try:
            async with self._pool.connection() as conn, conn.transaction():
                await conn.execute(
                    sql("insert_node"),
                    [node.node_id, node.name, node.role, sorted(node.scopes), node.secret_sha256,
                     node.created_at, node.revoked_at],
                )
                await conn.execute(sql("announce_nodes"), [CHANNEL, "added"])
        except psycopg.errors.UniqueViolation as taken:
            raise NodeExists(node.name) from taken

    async def revoke(self, name: str, at: datetime) -> bool:
        async with self._pool.connection() as conn, conn.transaction():
            cur = await conn.execute(sql("revoke_node"), [at, name])
            if cur.rowcount:
                await conn.execute(sql("announce_nodes"), [CHANNEL, "revoked"])
            return bool(cur.rowcount)

    async def get(self, node_id: str) -> Node | None:
        rows = await fetch_rows(self._pool, sql("get_node"), [node_id])
        return _node(rows[0]) if rows else None

    async def live(self) -> Sequence[Node]:
        return [_node(row) for row in await fetch_rows(self._pool, sql("live_nodes"))]

    async def all(self) -> Sequence[tuple[Node, datetime | None]]:
        """Every node with its last contact, for operators."""
        return [(_node(row), row["last_seen_at"]) for row in await fetch_rows(self._pool, sql("all_nodes"))]

    async def seen(self, last_contact: Mapping[str, datetime]) -> None:
        ids, ats = list(last_contact), list(last_contact.values())
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(sql("nodes_seen"), [ids, ats])
