"""A database that has lived a little, written by the use cases themselves: grants, a
payment, orders confirmed, one with a copy rendered and delivered (a debit), one cancelled
(a release). What the ledger audit and the backup tests start from."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from dependency_injector import providers

from videocopies.adapters.memory import InMemoryPaymentProvider
from videocopies.application import use_cases as uc
from videocopies.domain.coins import LotKind
from videocopies.domain.jobs import CopyArtifact
from videocopies.domain.shared import UserId, WorkerId
from videocopies.roles.containers import PostgresService
from videocopies.settings import Settings


async def live_a_little(url: str) -> dict[str, int]:
    """Returns how many orders were confirmed and coins granted, for the report to match."""
    service = PostgresService(settings=Settings(quote_secret=b"ledger-scenario" * 3))
    service.gateways.config.from_dict({"database_url": url, "pool_size": 2})
    service.gateways.payment_provider.override(providers.Object(InMemoryPaymentProvider()))
    pool = service.gateways.pool()
    await pool.open(wait=True, timeout=30)
    cases = service.use_cases
    try:
        users = [UserId(7_001), UserId(7_002), UserId(7_003)]
        for user in users:
            await cases.grant_coins()(uc.GrantCoinsCommand(user, LotKind.START, 50, timedelta(days=30)))
        await cases.grant_coins()(uc.GrantCoinsCommand(users[0], LotKind.MANUAL, 7, None))
        await cases.credit_payment()(uc.CreditPaymentCommand("tx-ledger-1", users[1], 100, 50, "XTR"))
        orders = []
        for user, copies in zip(users, (5, 1, 5), strict=True):
            quote = await cases.quote_order()(uc.QuoteOrderCommand(user, f"sources/{user}.mp4", copies))
            orders.append(await cases.confirm_order()(uc.ConfirmOrderCommand(user, quote.quote_id, quote.token)))
        (job,) = await cases.claim_job()(uc.ClaimJobCommand(WorkerId("scenario-worker")))
        artifact = CopyArtifact(f"copies/{job.job_id}/0.mp4", 1000, "0" * 64, 3.0, 720, 1280)
        await cases.checkpoint_copy()(uc.CheckpointCopyCommand(job.job_id, job.token, 0, artifact))
        await cases.record_delivery()(uc.RecordDeliveryCommand(job.order_id, 0))
        await cases.cancel_order()(uc.CancelOrderCommand(users[2], orders[2]))
        return {"orders": len(orders), "coins_granted": 3 * 50 + 7 + 100, "accounts": len(users)}
    finally:
        await pool.close()


def now() -> datetime:
    return datetime.now(UTC)
