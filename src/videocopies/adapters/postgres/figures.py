"""What the operators' figures need from the database, in one short read: the queue's
depth, how far behind the inbox and the outbox are, and the refused (zombie) writes.

Only unfinished jobs are counted, through their partial indexes, so a scrape costs the same
whatever the history holds.
"""

from __future__ import annotations

import attrs
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

_FIGURES = """
SELECT (SELECT count(*) FROM jobs WHERE state = 'queued') AS queued,
       (SELECT count(*) FROM jobs WHERE state = 'leased' AND lease_until > now()) AS leased,
       (SELECT count(*) FROM jobs WHERE state = 'leased' AND lease_until <= now()) AS lapsed,
       (SELECT count(*) FROM inbox WHERE processed_at IS NULL) AS inbox_pending,
       (SELECT coalesce(extract(epoch FROM now() - min(received_at)), 0)
          FROM inbox WHERE processed_at IS NULL) AS inbox_lag_s,
       (SELECT count(*) FROM outbox WHERE sent_at IS NULL) AS outbox_pending,
       (SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0)
          FROM outbox WHERE sent_at IS NULL) AS outbox_lag_s,
       (SELECT count(*) FROM refused_writes) AS refused_writes,
       (SELECT count(*) FROM payments) AS payments,
       (SELECT coalesce(sum(coins), 0) FROM payments) AS payment_coins
"""


@attrs.frozen
class QueueFigures:
    queued: int
    leased: int
    lapsed: int  # leased, but the lease ran out and the sweep has not taken it back yet
    inbox_pending: int
    inbox_lag_s: float  # age of the oldest unhandled inbox event
    outbox_pending: int
    outbox_lag_s: float  # age of the oldest unsent message
    refused_writes: int
    payments: int  # credited, all time
    payment_coins: int


async def read_figures(pool: AsyncConnectionPool) -> QueueFigures:
    async with pool.connection() as conn:
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(_FIGURES)
        row = await cur.fetchone()
        await conn.commit()
    assert row is not None
    return QueueFigures(**{k: float(v) if k.endswith("_s") else int(v) for k, v in row.items()})
