"""Telegram's final refusals, reported by edge: a user who blocked the bot has their orders
stopped and nothing more is sent to them; a copy too large to send is not charged and its
user is told; nothing is retried forever."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from videocopies.application import use_cases as uc
from videocopies.application.ports import OutboxMessage
from videocopies.domain.jobs import CopyArtifact
from videocopies.domain.shared import JobId, OwnerToken, UserId
from videocopies.embedded.postgres import LocalPostgres

from .core_api import CoreApi, serve_core

BLOCKED = "Telegram server says - Forbidden: bot was blocked by the user"


@pytest.fixture
async def api(pg_server: LocalPostgres, database: str) -> AsyncIterator[CoreApi]:
    async for served in serve_core(pg_server.url(database), outbox_max_attempts=2):
        yield served


async def rendered(api: CoreApi, user: int, copies: int, made: int) -> tuple[str, dict[str, str]]:
    """An order of `copies`, claimed by a worker, with its first `made` copies stored."""
    order_id = await api.order(user, copies)
    async with api.client("worker-a") as worker:
        (job,) = (await worker.post("/v1/jobs/claim", json={})).json()["jobs"]
    for index in range(made):
        artifact = CopyArtifact(f"copies/{order_id}/{index}.mp4", 10, "a" * 64, 3.0, 720, 1280)
        await api.core.container.use_cases.checkpoint_copy()(
            uc.CheckpointCopyCommand(JobId(job["job_id"]), OwnerToken(job["token"]), index, artifact)
        )
    return order_id, job


async def balance(api: CoreApi, user: int) -> tuple[int, int, int]:
    async with api.core.container.gateways.uow() as uow:
        account = await uow.accounts.get(UserId(user))
    got = account.balance(datetime.now(UTC))
    return got.available, got.reserved, got.debited


async def test_a_user_who_blocked_the_bot_gets_nothing_more_and_pays_only_for_what_arrived(api: CoreApi) -> None:
    order_id, job = await rendered(api, 700, copies=5, made=2)
    async with api.client("edge-1") as edge, api.client("worker-a") as worker:
        first, second = (await edge.post("/v1/outbox/claim", json={"limit": 10})).json()["messages"]
        answer = await edge.post("/v1/outbox/reports", json={"reports": [
            {"id": first["id"], "message_id": 1, "file_id": "f1"},
            {"id": second["id"], "error": BLOCKED, "refusal": "blocked"},
        ]})
        assert answer.json() == {"recorded": 2, "debited": 4}
        lease = {"token": job["token"]}
        renewed = await worker.post(f"/v1/jobs/{job['job_id']}/renew", json=lease)
        assert renewed.json()["cancel_requested"] is True  # the worker stops rendering
        assert (await worker.post(f"/v1/jobs/{job['job_id']}/cancel/acknowledge", json=lease)).status_code == 200
        # The order's close is written for the user, and given up by core instead of sent.
        assert (await edge.post("/v1/outbox/claim", json={"limit": 10})).json() == {"messages": []}
    assert await api.rows("SELECT state FROM orders WHERE order_id = %s", order_id) == [("cancelled",)]
    assert await balance(api, 700) == (96, 0, 4)  # 100 granted, one copy of 4 delivered
    assert await api.rows("SELECT kind, delivery FROM outbox WHERE user_id = 700 ORDER BY id") == [
        ("copy_ready", {"message_id": 1, "file_id": "f1"}),
        ("copy_ready", {"error": BLOCKED, "refusal": "blocked"}),
        ("progress", {"error": "blocked"}),  # the delivered copy, for the order's progress message
        ("order_closed", {"error": "blocked"}),
    ]
    (blocked_at,), = await api.rows("SELECT blocked_at FROM bot_users WHERE user_id = 700")
    assert blocked_at is not None


async def test_a_copy_too_large_to_send_is_not_charged_and_its_user_is_told(api: CoreApi) -> None:
    await rendered(api, 701, copies=1, made=1)
    async with api.client("edge-1") as edge:
        (copy,) = (await edge.post("/v1/outbox/claim", json={"limit": 10})).json()["messages"]
        answer = await edge.post(f"/v1/outbox/{copy['id']}/sent",
                                 json={"error": "Request Entity Too Large", "refusal": "too_large"})
        assert answer.json() == {"recorded": True, "debited": 0}
        (told,) = (await edge.post("/v1/outbox/claim", json={"limit": 10})).json()["messages"]
    assert told["text"] == "Copy 1 of 1 came out too large for Telegram to send. It is not charged."
    assert await balance(api, 701) == (100, 0, 0)


async def test_nothing_is_retried_forever(api: CoreApi) -> None:
    outbox = api.core.outbox
    await outbox.queue([OutboxMessage(UserId(702), "screen", {"screen": "help", "max_mb": 20, "max_s": 180}, "h1"),
                        OutboxMessage(UserId(703), "screen", {"screen": "unknown"}, "h2")])
    async with api.client("edge-1") as edge:
        retry = {"after_s": 0, "error": "Too Many Requests: retry after 3"}
        for answer in ("held", "given_up"):  # at most two attempts here
            claimed = (await edge.post("/v1/outbox/claim", json={"limit": 1})).json()["messages"]
            assert [m["chat_id"] for m in claimed] == [702]
            assert (await edge.post(f"/v1/outbox/{claimed[0]['id']}/retry", json=retry)).json() == {"state": answer}
        # A message claimed again and again without any report is given up at its next claim.
        (unreported,) = (await edge.post("/v1/outbox/claim", json={"limit": 1})).json()["messages"]
        for expected in (1, 0):
            await outbox.retry_later(unreported["id"], datetime.now(UTC))  # as if its hold had run out
            assert len((await edge.post("/v1/outbox/claim", json={"limit": 1})).json()["messages"]) == expected
    assert await api.rows("SELECT user_id, delivery->>'error' FROM outbox ORDER BY id") == [
        (702, "gave up after 2 attempts: Too Many Requests: retry after 3"),
        (703, "gave up after 2 attempts: never reported"),
    ]
