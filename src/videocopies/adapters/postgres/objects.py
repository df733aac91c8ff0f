"""Object rows in PostgreSQL (migration 0019): what the lifecycle duty reads and records, and
the figures of the store's contents. The rows themselves are written by triggers."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs
from psycopg_pool import AsyncConnectionPool

from videocopies.adapters.postgres.pool import fetch_rows
from videocopies.adapters.postgres.queries import composed, sql
from videocopies.application.ports import ObjectTally
from videocopies.domain.objects import ObjectKind, ObjectState, StoredObject


@attrs.frozen
class ObjectFigures:
    """Objects and their bytes by (kind, state)."""

    counts: dict[tuple[str, str], int]
    sizes: dict[tuple[str, str], int]


def _object(row: dict[str, Any]) -> StoredObject:
    return StoredObject(**{**row, "kind": ObjectKind(row["kind"]), "state": ObjectState(row["state"])})


class PostgresObjectRows:
    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool

    async def note_released(self, now: datetime) -> None:
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(sql("release_copies"), {"now": now})
            for name in ("release_sources", "keep_sources"):
                await conn.execute(composed(name, in_use="source_in_use"), {"now": now})

    async def due(self, kind: ObjectKind, before: datetime, limit: int) -> Sequence[StoredObject]:
        query = sql("due_sources" if kind is ObjectKind.SOURCE else "due_copies")
        return [_object(row) for row in await fetch_rows(self._pool, query, {"before": before, "limit": limit})]

    async def begin_deleting(self, keys: Sequence[str], before: datetime, now: datetime) -> list[str]:
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(sql("lock_objects"), {"keys": list(keys)})
            await conn.execute(sql("lock_object_quotes"), {"keys": list(keys)})
            cur = await conn.execute(sql("begin_deleting"), {"keys": list(keys), "before": before, "now": now})
            taken = {key for (key,) in await cur.fetchall()}
        return [key for key in keys if key in taken]

    async def mark_deleted(self, keys: Sequence[str], now: datetime) -> None:
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(sql("mark_deleted"), {"keys": list(keys), "now": now})

    async def look_up(self, keys: Sequence[str]) -> tuple[dict[str, ObjectState], set[str]]:
        rows = await fetch_rows(self._pool, sql("look_up_objects"), {"keys": list(keys)})
        states = {r["key"]: ObjectState(r["state"]) for r in rows if r["state"] is not None}
        return states, {r["key"] for r in rows if r["awaited"]}

    async def forget_deleted(self, before: datetime, limit: int) -> int:
        async with self._pool.connection() as conn, conn.transaction():
            cur = await conn.execute(sql("forget_deleted"), {"before": before, "limit": limit})
            return cur.rowcount

    async def get(self, key: str) -> StoredObject | None:
        """One object's row (whether a copy is still in the store, say)."""
        rows = await fetch_rows(self._pool, sql("get_object"), {"key": key})
        return _object(rows[0]) if rows else None

    async def figures(self) -> ObjectFigures:
        rows = await fetch_rows(self._pool, sql("object_figures"), {})
        return ObjectFigures(
            {(r["kind"], r["state"]): int(r["objects"]) for r in rows},
            {(r["kind"], r["state"]): int(r["bytes"]) for r in rows},
        )

    async def tallies(self) -> list[ObjectTally]:
        """The same figures for the control panel, by kind then state."""
        rows = await fetch_rows(self._pool, sql("object_figures"), {})
        return sorted(
            (ObjectTally(r["kind"], r["state"], int(r["objects"]), int(r["bytes"])) for r in rows),
            key=lambda t: (t.kind != "source", ["stored", "delivered", "deleted"].index(t.state)),
        )
