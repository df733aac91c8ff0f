"""Object rows in PostgreSQL (migration 0019): what the lifecycle duty reads and records, and
the figures of the store's contents. The rows themselves are written by triggers."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from videocopies.application.objects import ObjectTally
from videocopies.domain.objects import ObjectKind, ObjectState, StoredObject

_OPEN_ORDER = "('confirmed', 'running', 'cancelling')"
_CLOSED_ORDER = "('done', 'cancelled', 'failed')"
# A source is in use while an order or a live quote of its user names it. Orders are found
# through (user_id, created_at), from a little before the source's row: the row's time is the
# database's and the order's the core's clock.
_SOURCE_IN_USE = f"""
EXISTS (SELECT 1 FROM orders o
         WHERE o.user_id = s.user_id AND o.created_at >= s.stored_at - interval '1 hour'
           AND o.source_key = s.key
           AND (o.state IN {_OPEN_ORDER} OR (o.state = 'quoted' AND o.quote_expires_at > %(now)s)))
"""
_NOTE_RELEASED = f"""
UPDATE stored_objects s SET released_at = %(now)s FROM orders o
 WHERE s.state <> 'deleted' AND s.released_at IS NULL AND s.kind = 'copy'
   AND o.order_id = s.order_id AND o.state IN {_CLOSED_ORDER};
UPDATE stored_objects s SET released_at = %(now)s
 WHERE s.state <> 'deleted' AND s.released_at IS NULL AND s.kind = 'source' AND NOT {_SOURCE_IN_USE};
UPDATE stored_objects s SET released_at = NULL
 WHERE s.state = 'stored' AND s.released_at IS NOT NULL AND s.deleted_at IS NULL AND s.kind = 'source'
   AND {_SOURCE_IN_USE};
"""
_COLUMNS = "key, kind, state, stored_at, size, sha256, order_id, delivered_at, released_at, deleted_at"
_DUE_SOURCES = f"""
SELECT {_COLUMNS} FROM stored_objects
 WHERE state = 'stored' AND released_at <= %(before)s AND kind = 'source'
 ORDER BY released_at LIMIT %(limit)s
"""
_DUE_COPIES = f"""
(SELECT {_COLUMNS} FROM stored_objects
  WHERE state = 'delivered' AND delivered_at <= %(before)s AND kind = 'copy' ORDER BY delivered_at LIMIT %(limit)s)
UNION ALL
(SELECT {_COLUMNS} FROM stored_objects
  WHERE state = 'stored' AND released_at <= %(before)s AND kind = 'copy' ORDER BY released_at LIMIT %(limit)s)
LIMIT %(limit)s
"""
# The decision to delete, under the rows' locks: the source's row, which a quote locks too, and its
# quotes' rows, which a confirmation locks (migration 0021). Either the quote or confirmation came
# first and the source is in use (checked by a statement that starts after the locks were had, so
# it sees that order), or it comes after and is refused. `deleted_at` on a row still stored: the
# store's delete is under way (or failed, and the next pass tries again).
_LOCK = "SELECT key FROM stored_objects WHERE key = ANY(%(keys)s) ORDER BY key FOR UPDATE"
_LOCK_QUOTES = """
SELECT 1 FROM stored_objects s JOIN orders o
    ON o.user_id = s.user_id AND o.created_at >= s.stored_at - interval '1 hour' AND o.source_key = s.key
 WHERE s.key = ANY(%(keys)s) AND s.kind = 'source' AND o.state = 'quoted'
 ORDER BY o.order_id
   FOR SHARE OF o
"""
_BEGIN_DELETING = f"""
UPDATE stored_objects s SET deleted_at = coalesce(s.deleted_at, %(now)s)
 WHERE s.key = ANY(%(keys)s) AND s.state <> 'deleted'
   AND (s.deleted_at IS NOT NULL
        OR (s.kind = 'copy' AND s.state = 'delivered' AND s.delivered_at <= %(before)s)
        OR (s.kind = 'copy' AND s.state = 'stored' AND s.released_at <= %(before)s)
        OR (s.kind = 'source' AND s.state = 'stored' AND s.released_at <= %(before)s AND NOT {_SOURCE_IN_USE}))
RETURNING s.key
"""
_MARK_DELETED = """
UPDATE stored_objects SET state = 'deleted', deleted_at = %(now)s WHERE key = ANY(%(keys)s) AND state <> 'deleted'
"""
# A row may still come for a copy while its order's job is open (an upload before its
# checkpoint) and for a source while its inbox event is unhandled (edge is fetching it).
_LOOK_UP = """
WITH listed AS (SELECT unnest(%(keys)s::text[]) AS key)
SELECT l.key, s.state,
       CASE WHEN l.key LIKE 'copies/%%' THEN EXISTS (
                SELECT 1 FROM jobs j WHERE j.order_id = split_part(l.key, '/', 2) AND j.state IN ('queued', 'leased'))
            WHEN l.key ~ '^sources/[0-9]+/[0-9]+\\.mp4$' THEN EXISTS (
                SELECT 1 FROM inbox i WHERE i.update_id = split_part(split_part(l.key, '/', 3), '.', 1)::bigint
                   AND i.processed_at IS NULL)
            ELSE false END AS awaited
  FROM listed l LEFT JOIN stored_objects s USING (key)
"""
_FORGET = """
DELETE FROM stored_objects WHERE key IN (
    SELECT key FROM stored_objects WHERE state = 'deleted' AND deleted_at <= %(before)s LIMIT %(limit)s)
"""
_FIGURES = """
SELECT kind, state, count(*) AS objects, coalesce(sum(size), 0) AS bytes FROM stored_objects GROUP BY kind, state
"""


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
            for statement in filter(str.strip, _NOTE_RELEASED.split(";")):
                await conn.execute(statement, {"now": now})

    async def due(self, kind: ObjectKind, before: datetime, limit: int) -> Sequence[StoredObject]:
        query = _DUE_SOURCES if kind is ObjectKind.SOURCE else _DUE_COPIES
        return [_object(row) for row in await self._rows(query, {"before": before, "limit": limit})]

    async def begin_deleting(self, keys: Sequence[str], before: datetime, now: datetime) -> list[str]:
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(_LOCK, {"keys": list(keys)})
            await conn.execute(_LOCK_QUOTES, {"keys": list(keys)})
            cur = await conn.execute(_BEGIN_DELETING, {"keys": list(keys), "before": before, "now": now})
            taken = {key for (key,) in await cur.fetchall()}
        return [key for key in keys if key in taken]

    async def mark_deleted(self, keys: Sequence[str], now: datetime) -> None:
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(_MARK_DELETED, {"keys": list(keys), "now": now})

    async def look_up(self, keys: Sequence[str]) -> tuple[dict[str, ObjectState], set[str]]:
        rows = await self._rows(_LOOK_UP, {"keys": list(keys)})
        states = {r["key"]: ObjectState(r["state"]) for r in rows if r["state"] is not None}
        return states, {r["key"] for r in rows if r["awaited"]}

    async def forget_deleted(self, before: datetime, limit: int) -> int:
        async with self._pool.connection() as conn, conn.transaction():
            cur = await conn.execute(_FORGET, {"before": before, "limit": limit})
            return cur.rowcount

    async def get(self, key: str) -> StoredObject | None:
        """One object's row (whether a copy is still in the store, say)."""
        rows = await self._rows(f"SELECT {_COLUMNS} FROM stored_objects WHERE key = %(key)s", {"key": key})
        return _object(rows[0]) if rows else None

    async def figures(self) -> ObjectFigures:
        rows = await self._rows(_FIGURES, {})
        return ObjectFigures(
            {(r["kind"], r["state"]): int(r["objects"]) for r in rows},
            {(r["kind"], r["state"]): int(r["bytes"]) for r in rows},
        )

    async def tallies(self) -> list[ObjectTally]:
        """The same figures for the control panel, by kind then state."""
        rows = await self._rows(_FIGURES, {})
        return sorted(
            (ObjectTally(r["kind"], r["state"], int(r["objects"]), int(r["bytes"])) for r in rows),
            key=lambda t: (t.kind != "source", ["stored", "delivered", "deleted"].index(t.state)),
        )

    async def _rows(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(query, params)
            rows = await cur.fetchall()
            await conn.commit()
        return rows
