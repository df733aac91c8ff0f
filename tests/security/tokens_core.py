"""A core on a real database served over real HTTP (tests/integration/core_api.py), with two
edges' and an operator's node tokens, an object store and (when given) a Telegram payment
provider: what the token tests attack."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from integration.core_api import CoreApi, serve_core
from videocopies.application.ports import ObjectStore

__all__ = ["CoreApi", "core_serving"]


@asynccontextmanager
async def core_serving(
    url: str, store: ObjectStore | None = None, provider: Any = None, bot: Any = None,
    nodes: tuple[tuple[str, str], ...] = (("edge-1", "edge"), ("edge-2", "edge"), ("control-1", "control")),
    **settings: Any,
) -> AsyncIterator[CoreApi]:
    """`bot`: the aiogram Bot behind `provider`, closed when core stops; `settings`: Settings fields."""
    async for api in serve_core(url, store=store, provider=provider, nodes=nodes, settings=settings, payment_bot=bot):
        yield api
