"""Edge's long poll for messages to send ends with the edge: an edge that stops mid-poll (a
restart, a deploy) has nothing claimed for it afterwards, so the next edge sends at once
instead of after the claim's hold (a minute)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from videocopies.application.ports import OutboxMessage
from videocopies.domain.shared import UserId
from videocopies.embedded.postgres import LocalPostgres

from .core_api import CoreApi, serve_core


@pytest.fixture
async def api(pg_server: LocalPostgres, database: str) -> AsyncIterator[CoreApi]:
    async for served in serve_core(pg_server.url(database)):
        yield served


async def test_a_message_queued_after_an_edge_hung_up_goes_to_the_next_edge_at_once(api: CoreApi) -> None:
    async with api.client("edge-1") as stopping:
        with pytest.raises(httpx.ReadTimeout):  # the edge goes away half a second into its poll
            await stopping.post("/v1/outbox/claim", json={"limit": 10, "wait_s": 20}, timeout=0.5)
    await asyncio.sleep(0.2)
    expires = (datetime.now(UTC) + timedelta(minutes=10)).isoformat()
    quote = {"screen": "quote", "copies": 5, "per_copy": 4, "total": 20, "expires_at": expires, "confirm_data": "c:q1"}
    await api.core.outbox.queue([OutboxMessage(UserId(810), "screen", quote, "test:after-hang-up")])
    api.core.outbox_news.queued()  # as core's writes announce a message
    await asyncio.sleep(0.5)
    async with api.client("edge-1") as restarted:
        messages = (await restarted.post("/v1/outbox/claim", json={"limit": 10})).json()["messages"]
    assert [m["chat_id"] for m in messages] == [810]
    (attempts,), = await api.rows("SELECT attempts FROM outbox WHERE dedup_key = 'test:after-hang-up'")
    assert attempts == 1  # claimed once: by the edge that is there
