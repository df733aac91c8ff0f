"""A core on a real database served over real HTTP, with an edge's node token, an object store
and (when given) a Telegram payment provider: what the token tests attack."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import attrs
import httpx
from dependency_injector import providers

from videocopies.adapters.postgres import migrate
from videocopies.adapters.postgres.cluster import free_port
from videocopies.adapters.system import SystemClock
from videocopies.application.nodes import IssueNodeToken
from videocopies.application.ports import ObjectStore
from videocopies.roles.core import Core, build, server
from videocopies.settings import Settings


@attrs.define
class CoreApi:
    url: str
    core: Core
    tokens: dict[str, str]

    def client(self, name: str | None = None) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self.tokens[name]}"} if name else {}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=30)

    async def rows(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        async with self.core.pool.connection() as conn:
            cur = await conn.execute(query, list(params))
            rows = await cur.fetchall()
            await conn.commit()
        return rows

    async def until(self, query: str, *params: Any, timeout: float = 15.0) -> list[tuple[Any, ...]]:
        """The rows of `query` once there are any (the inbox is handled in the background)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not (rows := await self.rows(query, *params)):
            assert loop.time() < deadline, f"nothing came for {query}"
            await asyncio.sleep(0.05)
        return rows


@asynccontextmanager
async def core_serving(
    url: str, store: ObjectStore | None = None, provider: Any = None, bot: Any = None,
    nodes: tuple[tuple[str, str], ...] = (("edge-1", "edge"), ("edge-2", "edge"), ("control-1", "control")),
    **settings: Any,
) -> AsyncIterator[CoreApi]:
    """`provider`: core's payment provider (None: none configured, as without a bot token);
    `bot`: the aiogram Bot behind it, closed when core stops; `nodes`: (name, role) to issue
    tokens for."""
    config = Settings(quote_secret=b"tokens-secret" * 4, lease_ttl=timedelta(seconds=30), **settings)
    container = build(config, url, pool_size=3, lease_pool_size=2, safety_poll_s=10.0)
    if provider is not None:
        container.gateways.payment_provider.override(providers.Object(provider))
    running_core = Core(container, store=store, schema=migrate.check(url), payment_bot=bot)
    port = free_port()
    running = server(running_core, "127.0.0.1", port)
    serving = asyncio.create_task(running.serve())
    while not running.started:
        assert not serving.done(), serving.exception()
        await asyncio.sleep(0.01)
    issue = IssueNodeToken(running_core.registry, SystemClock(), secrets.token_hex)
    tokens = {name: (await issue(name, role)).token for name, role in nodes}
    try:
        yield CoreApi(f"http://127.0.0.1:{port}", running_core, tokens)
    finally:
        running.should_exit = True
        await serving
