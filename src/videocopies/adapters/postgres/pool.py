"""Connection pools that work through PgBouncer in transaction mode: no server-side
prepared statements and no session state."""

from __future__ import annotations

from psycopg_pool import AsyncConnectionPool


def make_pool(
    url: str, min_size: int = 1, max_size: int = 10, name: str = "videocopies", *, direct: bool = False
) -> AsyncConnectionPool:
    """`direct=True` only for a connection straight to PostgreSQL: it lets psycopg prepare
    hot statements server-side, which PgBouncer in transaction mode cannot carry."""
    return AsyncConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        open=False,
        name=name,
        kwargs={"prepare_threshold": 0 if direct else None, "autocommit": False},
    )
