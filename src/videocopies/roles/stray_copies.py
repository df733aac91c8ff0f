"""Copies stored under a lease that never checkpointed them (a worker killed between upload
and checkpoint, a zombie whose checkpoint was refused) are removed once their job closed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Protocol

from psycopg_pool import AsyncConnectionPool

log = logging.getLogger(__name__)

# Closed jobs of orders this recent are looked at again on every pass: an upload whose URL
# was signed before the job closed may land up to the URL's lifetime later.
_CLOSED_JOBS = """
SELECT j.order_id, coalesce(array_agg(c.object_key) FILTER (WHERE c.object_key IS NOT NULL), '{}')
FROM jobs j JOIN orders o USING (order_id) LEFT JOIN job_checkpoints c USING (job_id)
WHERE j.state IN ('done', 'failed', 'cancelled') AND o.created_at > now() - %s * interval '1 second'
GROUP BY j.order_id
"""


class ListedStore(Protocol):
    async def keys(self, prefix: str) -> list[str]: ...
    async def delete(self, key: str) -> None: ...


async def remove_stray_copies(pool: AsyncConnectionPool, store: ListedStore, window_s: float) -> int:
    async with pool.connection() as conn:
        cur = await conn.execute(_CLOSED_JOBS, [window_s])
        closed = await cur.fetchall()
        await conn.commit()
    removed = 0
    for order_id, kept in closed:
        for key in set(await store.keys(f"copies/{order_id}")) - set(kept):
            await store.delete(key)
            removed += 1
    return removed


async def keep_removing(
    pool: AsyncConnectionPool, store: ListedStore, stop: asyncio.Event, every_s: float, window_s: float
) -> None:
    while not stop.is_set():
        try:
            if removed := await remove_stray_copies(pool, store, window_s):
                log.info("removed %d stray copies", removed)
        except Exception as error:  # noqa: BLE001 - storage or database down: the next pass tries again
            log.warning("removing stray copies failed: %r", error)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)
