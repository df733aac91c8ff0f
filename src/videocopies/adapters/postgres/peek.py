"""A glance at the queues outside any transaction: one statement, no locks.

Core looks before it sweeps or makes a safety-poll claim, so an idle queue costs the
database one short read per interval instead of a transaction of three statements. A
glance only decides whether to look properly; the claim and the sweep stay transactional.
"""

from __future__ import annotations

from typing import Any

from psycopg_pool import AsyncConnectionPool

from videocopies.adapters.postgres.queries import sql


class PostgresQueuePeek:
    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool

    async def claimable(self) -> bool:
        return await self._ask(sql("glance_claimable"))

    async def lapsed(self) -> bool:
        return await self._ask(sql("glance_lapsed"))

    async def inbox_waiting(self) -> bool:
        """Some user has inbox events nobody is handling (news of them may have been lost)."""
        return await self._ask(sql("glance_inbox"))

    async def _ask(self, query: str) -> bool:
        return await glance(self._pool, query)


async def glance(pool: AsyncConnectionPool, query: str) -> bool:
    """One yes-or-no read, outside any transaction (no BEGIN/COMMIT around it)."""
    return bool(await glance_at(pool, query))


async def glance_at(pool: AsyncConnectionPool, query: str) -> Any:
    """One value read outside any transaction (no BEGIN/COMMIT around it); None without a row."""
    async with pool.connection() as conn:
        await conn.set_autocommit(True)
        try:
            cur = await conn.execute(query)
            row = await cur.fetchone()
        finally:
            await conn.set_autocommit(False)
    return row[0] if row else None
