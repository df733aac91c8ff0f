"""A glance at the queues outside any transaction: one statement, no locks.

Core looks before it sweeps or makes a safety-poll claim, so an idle queue costs the
database one short read per interval instead of a transaction of three statements. A
glance only decides whether to look properly; the claim and the sweep stay transactional.
"""

from __future__ import annotations

from psycopg_pool import AsyncConnectionPool

_CLAIMABLE = """
SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'queued')
    OR EXISTS (SELECT 1 FROM jobs WHERE state = 'leased' AND lease_until <= now())
"""
_INBOX = "SELECT EXISTS (SELECT 1 FROM inbox_users WHERE claimed_until IS NULL OR claimed_until <= now())"
_LAPSED = "SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'leased' AND lease_until <= now())"


class PostgresQueuePeek:
    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool

    async def claimable(self) -> bool:
        return await self._ask(_CLAIMABLE)

    async def lapsed(self) -> bool:
        return await self._ask(_LAPSED)

    async def inbox_waiting(self) -> bool:
        """Some user has inbox events nobody is handling (news of them may have been lost)."""
        return await self._ask(_INBOX)

    async def _ask(self, query: str) -> bool:
        return await glance(self._pool, query)


async def glance(pool: AsyncConnectionPool, query: str) -> bool:
    """One yes-or-no read, outside any transaction (no BEGIN/COMMIT around it)."""
    async with pool.connection() as conn:
        await conn.set_autocommit(True)
        try:
            cur = await conn.execute(query)
            row = await cur.fetchone()
        finally:
            await conn.set_autocommit(False)
    return bool(row and row[0])
