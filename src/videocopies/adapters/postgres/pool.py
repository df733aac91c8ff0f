"""Connection pools that work through PgBouncer in transaction mode: no server-side
prepared statements and no session state."""

from __future__ import annotations

import select
from typing import Any

from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool


class _DropDeadConnections:
    """The pool's check before it hands a connection out. An idle connection has nothing to
    read, so one that does was closed by its server (a restart, a failover); that costs a
    poll, not a round trip. The first dead one drains the pool, because its idle neighbours
    went to the same server: otherwise each would cost a client a try and a back-off."""

    def __init__(self) -> None:
        self.pool: AsyncConnectionPool | None = None

    async def __call__(self, conn: Any) -> None:
        if not conn.closed:
            poll = select.poll()
            poll.register(conn.fileno(), select.POLLIN)
            if not poll.poll(0):
                return
        try:
            await AsyncConnectionPool.check_connection(conn)
        except Exception:
            if self.pool is not None:
                await self.pool.drain()
            raise


def make_pool(
    url: str, min_size: int = 1, max_size: int = 10, name: str = "videocopies", *, direct: bool = False,
    wait_s: float = 30.0,
) -> AsyncConnectionPool:
    """`direct=True` only for a connection straight to PostgreSQL: it lets psycopg prepare
    hot statements server-side, which PgBouncer in transaction mode cannot carry.

    `wait_s`: how long a caller waits for a connection before the pool gives up (a database
    that is away is answered as unavailable after this long, not after a client's timeout).

    `url` may name several servers with target_session_attrs=read-write: a connection made
    after a failover goes to the promoted standby."""
    check = _DropDeadConnections()
    pool = AsyncConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        open=False,
        name=name,
        check=check,
        timeout=wait_s,
        kwargs={"prepare_threshold": 0 if direct else None, "autocommit": False},
    )
    check.pool = pool
    return pool


async def fetch_rows(pool: AsyncConnectionPool, query: str, params: Any = None) -> list[dict[str, Any]]:
    """The rows of one statement, by column name, in a transaction of its own."""
    async with pool.connection() as conn, conn.transaction():
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(query, params)
        return await cur.fetchall()
