"""What the operators' figures need from the database, in one short read: the queue's
depth, how far behind the inbox and the outbox are, and the refused (zombie) writes.

Only unfinished jobs are counted, through their partial indexes, so a scrape costs the same
whatever the history holds.
"""

from __future__ import annotations

import attrs
from psycopg_pool import AsyncConnectionPool

from videocopies.adapters.postgres.pool import fetch_rows
from videocopies.adapters.postgres.queries import sql


@attrs.frozen
class QueueFigures:
    queued: int
    leased: int
    lapsed: int  # leased, but the lease ran out and the sweep has not taken it back yet
    inbox_pending: int
    inbox_lag_s: float  # age of the oldest unhandled inbox event
    outbox_pending: int
    outbox_lag_s: float  # age of the oldest unsent message
    buttons_lapsing: int  # sent quotes whose Confirm core's sweep will have taken off at their expiry
    refused_writes: int
    payments: int  # credited, all time
    payment_coins: int


async def read_figures(pool: AsyncConnectionPool) -> QueueFigures:
    (row,) = await fetch_rows(pool, sql("queue_figures"))
    return QueueFigures(**{k: float(v) if k.endswith("_s") else int(v) for k, v in row.items()})


async def active_leases(pool: AsyncConnectionPool) -> int:
    """Leases held now (blue/green waits for them to move)."""
    async with pool.connection() as conn:
        cur = await conn.execute(sql("count_active_leases"))
        row = await cur.fetchone()
        await conn.commit()
    assert row is not None
    return int(row[0])
