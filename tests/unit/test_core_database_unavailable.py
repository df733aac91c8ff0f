"""Core's answer while the database is away (a failover, a restart): 503 with Retry-After,
which edge's and workers' clients send again, instead of a 500 they would give up on."""

from __future__ import annotations

import httpx
import psycopg
from fastapi import FastAPI
from psycopg_pool import PoolTimeout

from videocopies.roles.core import database_unavailable


async def test_a_lost_connection_or_a_pool_timeout_is_503_retry() -> None:
    app = FastAPI()
    app.add_exception_handler(psycopg.OperationalError, database_unavailable)

    @app.get("/lost")
    async def lost() -> None:
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    @app.get("/waited")
    async def waited() -> None:
        raise PoolTimeout("couldn't get a connection after 30.00 sec")

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://core") as client:
        for path in ("/lost", "/waited"):
            answer = await client.get(path)
            assert answer.status_code == 503 and answer.headers["retry-after"] == "1"
            assert answer.json()["error"] == "database_unavailable"
