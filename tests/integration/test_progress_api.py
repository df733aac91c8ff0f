"""The progress message through core's APIs on PostgreSQL: the worker's figures become states of
the order's accepted screen, which edge is told to edit by its Telegram message id (learnt from
edge's report of the screen, and from its report of a message that replaced it); a figure in
the tenth already told says nothing new; only the lease holder may report."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from videocopies.application import use_cases as uc
from videocopies.application.ports import OutboxMessage
from videocopies.domain.coins import LotKind
from videocopies.domain.shared import UserId
from videocopies.embedded.postgres import LocalPostgres

from .core_api import CoreApi, serve_core

USER = 710


@pytest.fixture
async def api(pg_server: LocalPostgres, database: str) -> AsyncIterator[CoreApi]:
    async for served in serve_core(pg_server.url(database)):
        yield served


async def accepted_order(api: CoreApi) -> str:
    """An order of 5 confirmed as the bot confirms one: its accepted screen written with it."""
    cases, user = api.core.container.use_cases, UserId(USER)
    await cases.grant_coins()(uc.GrantCoinsCommand(user, LotKind.START, 100, None))
    quote = await cases.quote_order()(uc.QuoteOrderCommand(user, f"sources/{USER}/clip.mp4", 5, 10))
    accepted = OutboxMessage(user, "screen", {"screen": "confirmed", "order_id": quote.quote_id, "copies": 5,
                                              "total": quote.total}, "in:1:1")
    return await cases.confirm_order()(uc.ConfirmOrderCommand(user, quote.quote_id, quote.token, accepted))


async def test_the_workers_figures_edit_the_accepted_screen_wherever_it_is(api: CoreApi) -> None:
    order_id = await accepted_order(api)
    async with api.client("edge-1") as edge, api.client("worker-a") as worker:
        (screen,) = (await edge.post("/v1/outbox/claim", json={"limit": 10})).json()["messages"]
        assert screen["progress"] == {"order_id": order_id, "carrier": True}
        await edge.post("/v1/outbox/reports", json={"reports": [{"id": screen["id"], "message_id": 41}]})

        (job,) = (await worker.post("/v1/jobs/claim", json={})).json()["jobs"]
        lease = {"token": job["token"]}
        progress = f"/v1/jobs/{job['job_id']}/copies/0/progress"
        assert (await worker.post(progress, json={**lease, "percent": 50})).json() == {"recorded": True}
        await worker.post(progress, json={**lease, "percent": 55})  # the same tenth: no new state
        (state,) = (await edge.post("/v1/outbox/claim", json={"limit": 10})).json()["messages"]
        assert state["kind"] == "progress" and state["progress"]["edit"] == 41
        assert state["text"].splitlines()[-2:] == ["Making copy 1 of 5: ▰▰▰▰▰▱▱▱▱▱ 50%", "Delivered: 0 of 5"]
        assert [b["data"] for row in state["buttons"] for b in row] == [f"x:{order_id}"]
        # The user had deleted message 41: edge sent the state as message 77.
        await edge.post("/v1/outbox/reports", json={"reports": [{"id": state["id"], "message_id": 77,
                                                                 "moved": True}]})
        await worker.post(progress, json={**lease, "percent": 70})
        (later,) = (await edge.post("/v1/outbox/claim", json={"limit": 10})).json()["messages"]
        assert later["progress"]["edit"] == 77 and later["text"].endswith("70%\nDelivered: 0 of 5")

        stolen = await worker.post(progress, json={"token": "not-the-owner-token", "percent": 90})
        assert stolen.status_code == 409
    assert await api.rows("SELECT count(*) FROM outbox WHERE user_id = %s AND kind = 'progress'", USER) == [(2,)]
