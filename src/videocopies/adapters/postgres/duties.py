"""Duty leases in PostgreSQL: the row is locked while the domain decides, so two nodes
asking at once are served one after the other."""

from __future__ import annotations

from collections.abc import Callable

import attrs
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from videocopies.adapters.postgres.queries import sql
from videocopies.domain.duties import DutyLease


class PostgresDutyLeases:
    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool

    async def hold(self, duty: str, decide: Callable[[DutyLease | None], DutyLease | None]) -> DutyLease | None:
        while True:
            async with self._pool.connection() as conn, conn.transaction():
                cur = conn.cursor(row_factory=dict_row)
                await cur.execute(sql("lock_duty"), [duty])
                row = await cur.fetchone()
                current = DutyLease(**row) if row else None
                wanted = decide(current)
                if wanted is None:
                    return current
                if current is not None:
                    await cur.execute(sql("update_duty"), attrs.asdict(wanted))
                    return wanted
                await cur.execute(sql("insert_duty"), attrs.asdict(wanted))
                if cur.rowcount == 1:
                    return wanted
            # Another node made the first row meanwhile: decide again on that one.
