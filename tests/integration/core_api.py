"""A core on a real database, served by uvicorn over real HTTP, with node tokens for a
worker and an edge: what the inbox and outbox tests talk to."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import attrs
import httpx
from dependency_injector import providers

from videocopies.adapters.postgres import migrate
from videocopies.adapters.system import SystemClock
from videocopies.application import use_cases as uc
from videocopies.application.nodes import IssueNodeToken
from videocopies.application.ports import ObjectStore
from videocopies.domain.coins import LotKind
from videocopies.domain.shared import UserId
from videocopies.embedded.postgres import free_port
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

    async def order(self, user: int, copies: int = 1) -> str:
        cases = self.core.container.use_cases
        await cases.grant_coins()(uc.GrantCoinsCommand(UserId(user), LotKind.START, 100, timedelta(days=1)))
        quote = await cases.quote_order()(uc.QuoteOrderCommand(UserId(user), f"sources/{user}/clip.mp4", copies, 10))
        return await cases.confirm_order()(uc.ConfirmOrderCommand(UserId(user), quote.quote_id, quote.token))

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


async def serve_core(
    url: str, *, store: ObjectStore | None = None, provider: Any = None,
    nodes: tuple[tuple[str, str], ...] = (("worker-a", "worker"), ("edge-1", "edge")),
    settings: dict[str, Any] | None = None, **core: Any,
) -> AsyncIterator[CoreApi]:
    """`provider`: core's payment provider (None: none, as without a bot token); `nodes`:
    (name, role) to issue tokens for; `settings`: Settings fields; `core`: Core's arguments."""
    config = Settings(quote_secret=b"api-secret" * 4, lease_ttl=timedelta(seconds=30), **(settings or {}))
    container = build(config, url, pool_size=3, lease_pool_size=2, safety_poll_s=10.0)
    if provider is not None:
        container.gateways.payment_provider.override(providers.Object(provider))
    running_core = Core(container, store=store, schema=migrate.check(url), **core)
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



def metric(text: str, sample: str) -> float:
    """A sample's value from Prometheus' text format (0 when it is absent)."""
    for line in text.splitlines():
        if line.startswith(sample + " "):
            return float(line.split()[-1])
    return 0.0
