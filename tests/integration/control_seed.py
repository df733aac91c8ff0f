"""A small history written through the use cases, for the control panel's tests: one order
done, one leased with a copy stored, one queued, a payment, and two node tokens."""

from __future__ import annotations

from datetime import timedelta

import attrs

from videocopies.application import use_cases as uc
from videocopies.domain.coins import LotKind
from videocopies.domain.jobs import CopyArtifact
from videocopies.domain.shared import JobId, OwnerToken, UserId, WorkerId
from videocopies.roles.containers import PostgresService
from videocopies.runtime.launch import issue_token_async
from videocopies.settings import Settings


@attrs.frozen
class Seeded:
    done_order: str
    leased_order: str
    queued_order: str
    leased_job: str
    user: int = 501
    other_user: int = 502
    payment: str = "tg-charge-control-1"


async def seed(url: str) -> Seeded:
    service = PostgresService(settings=Settings(quote_secret=b"control-seed" * 3, lease_ttl=timedelta(minutes=10)))
    service.gateways.config.from_dict({"database_url": url, "pool_size": 2})
    pool = service.gateways.pool()
    await pool.open(wait=True)
    cases = service.use_cases
    try:
        async def order(user: int, copies: int) -> str:
            quote = await cases.quote_order()(uc.QuoteOrderCommand(UserId(user), f"sources/{user}/clip.mp4", copies))
            return await cases.confirm_order()(uc.ConfirmOrderCommand(UserId(user), quote.quote_id, quote.token))

        async def store(job: uc.ClaimedJob, index: int) -> None:
            artifact = CopyArtifact(f"copies/{job.order_id}/{index}.mp4", 1000 + index, "c" * 64, 2.0, 540, 960)
            await cases.checkpoint_copy()(
                uc.CheckpointCopyCommand(JobId(job.job_id), OwnerToken(job.token), index, artifact)
            )

        await cases.grant_coins()(uc.GrantCoinsCommand(UserId(501), LotKind.START, 50, timedelta(days=30)))
        await cases.grant_coins()(uc.GrantCoinsCommand(UserId(502), LotKind.START, 50, timedelta(days=30)))
        await cases.credit_payment()(uc.CreditPaymentCommand("tg-charge-control-1", UserId(501), 220, 100, "XTR"))
        done = await order(501, 1)
        (first,) = await cases.claim_job()(uc.ClaimJobCommand(WorkerId("worker-a")))
        await store(first, 0)
        await cases.complete_job()(uc.CompleteJobCommand(JobId(first.job_id), OwnerToken(first.token), "r-done"))
        leased = await order(501, 5)
        (second,) = await cases.claim_job()(uc.ClaimJobCommand(WorkerId("worker-b")))
        await store(second, 0)
        await store(second, 1)
        queued = await order(502, 1)
        await issue_token_async(url, "worker-a", "worker")
        await issue_token_async(url, "edge-1", "edge")
        return Seeded(done, leased, queued, second.job_id)
    finally:
        await pool.close()
