"""Use cases behave the same on every backend: memory, PostgreSQL, PostgreSQL via PgBouncer."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import attrs
import pytest

from videocopies.application import use_cases as uc
from videocopies.application.errors import Conflict, NotFound, ServiceBusy
from videocopies.domain.coins import InsufficientCoins, LotKind
from videocopies.domain.jobs import CopyArtifact, LeaseLost
from videocopies.domain.orders import OrderState
from videocopies.domain.payments import PaymentMismatch, ProviderTransaction
from videocopies.domain.pricing import QuoteAlreadyUsed, QuoteExpired, QuoteForged
from videocopies.domain.quality import CopyQuality
from videocopies.domain.receipts import ReceiptConflict
from videocopies.domain.shared import UserId, WorkerId

from .conftest import Backend

USER = UserId(42)


def artifact(index: int) -> CopyArtifact:
    return CopyArtifact(f"copies/{index}.mp4", 1000 + index, f"{index:064x}", 3.0, 720, 1280)


async def balance(b: Backend, user: UserId = USER) -> tuple[int, int, int, int]:
    async with b.new_uow() as uow:
        account = await uow.accounts.get(user)
        assert account is not None
        got = account.balance(b.clock.now())
        assert got.balanced
        return got.available, got.reserved, got.debited, got.expired


async def confirmed_order(b: Backend, copies: int = 5, coins: int = 50, user: UserId = USER) -> str:
    await b.cases.grant_coins()(uc.GrantCoinsCommand(user, LotKind.START, coins, timedelta(days=30)))
    quote = await b.cases.quote_order()(uc.QuoteOrderCommand(user, "sources/clip.mp4", copies))
    return await b.cases.confirm_order()(uc.ConfirmOrderCommand(user, quote.quote_id, quote.token))


async def test_the_seed_example(backend: Backend) -> None:
    b = backend
    order_id = await confirmed_order(b)
    assert await balance(b) == (30, 20, 0, 0)
    (job,) = await b.cases.claim_job()(uc.ClaimJobCommand(WorkerId("a")))
    for index in (0, 1):
        await b.cases.checkpoint_copy()(uc.CheckpointCopyCommand(job.job_id, job.token, index, artifact(index)))
        assert await b.cases.record_delivery()(uc.RecordDeliveryCommand(order_id, index)) == 4
    assert await b.cases.record_delivery()(uc.RecordDeliveryCommand(order_id, 1)) == 0
    assert await b.cases.cancel_order()(uc.CancelOrderCommand(USER, order_id)) is OrderState.CANCELLING
    assert (await b.cases.renew_lease()(uc.RenewLeaseCommand(job.job_id, job.token))).cancel_requested
    await b.cases.acknowledge_cancel()(job.job_id, job.token)
    assert await balance(b) == (42, 0, 8, 0)
    async with b.new_uow() as uow:
        kinds = [m.kind for _, m in await uow.outbox.pending(10)]
    assert kinds == ["copy_ready", "progress", "copy_ready", "progress", "order_closed"]  # progress: delivered 1, 2


async def test_expired_lot_gets_returned_coins_as_expired(backend: Backend) -> None:
    b = backend
    await b.cases.grant_coins()(uc.GrantCoinsCommand(USER, LotKind.START, 20, timedelta(minutes=5)))
    quote = await b.cases.quote_order()(uc.QuoteOrderCommand(USER, "s", 5))
    order_id = await b.cases.confirm_order()(uc.ConfirmOrderCommand(USER, quote.quote_id, quote.token))
    b.clock.advance(timedelta(minutes=6))
    await b.cases.cancel_order()(uc.CancelOrderCommand(USER, order_id))
    assert await balance(b) == (0, 0, 0, 20)


async def test_quote_refusals_leave_nothing_reserved(backend: Backend) -> None:
    b = backend
    await b.cases.grant_coins()(uc.GrantCoinsCommand(USER, LotKind.START, 50, None))
    quote = await b.cases.quote_order()(uc.QuoteOrderCommand(USER, "s", 5))
    with pytest.raises(QuoteForged):
        await b.cases.confirm_order()(uc.ConfirmOrderCommand(USER, quote.quote_id, "A" * len(quote.token)))
    with pytest.raises(NotFound):
        await b.cases.confirm_order()(uc.ConfirmOrderCommand(UserId(7), quote.quote_id, quote.token))
    await b.cases.confirm_order()(uc.ConfirmOrderCommand(USER, quote.quote_id, quote.token))
    with pytest.raises(QuoteAlreadyUsed):
        await b.cases.confirm_order()(uc.ConfirmOrderCommand(USER, quote.quote_id, quote.token))
    late = await b.cases.quote_order()(uc.QuoteOrderCommand(USER, "s", 1))
    b.clock.advance(timedelta(minutes=11))
    with pytest.raises(QuoteExpired):
        await b.cases.confirm_order()(uc.ConfirmOrderCommand(USER, late.quote_id, late.token))
    assert await balance(b) == (30, 20, 0, 0)


async def test_insufficient_coins_change_nothing(backend: Backend) -> None:
    b = backend
    await b.cases.grant_coins()(uc.GrantCoinsCommand(USER, LotKind.START, 10, None))
    quote = await b.cases.quote_order()(uc.QuoteOrderCommand(USER, "s", 5))
    with pytest.raises(InsufficientCoins) as refused:
        await b.cases.confirm_order()(uc.ConfirmOrderCommand(USER, quote.quote_id, quote.token))
    assert refused.value.short_by == 10
    assert await balance(b) == (10, 0, 0, 0)
    async with b.new_uow() as uow:
        assert (await uow.orders.get(quote.quote_id)).state is OrderState.QUOTED
        assert await uow.jobs.for_order(quote.quote_id) is None


async def test_zombie_writes_are_refused_and_counted(backend: Backend) -> None:
    b = backend
    await confirmed_order(b)
    (first,) = await b.cases.claim_job()(uc.ClaimJobCommand(WorkerId("a")))
    await b.cases.checkpoint_copy()(uc.CheckpointCopyCommand(first.job_id, first.token, 0, artifact(0)))
    b.clock.advance(timedelta(seconds=31))
    (second,) = await b.cases.claim_job()(uc.ClaimJobCommand(WorkerId("b")))
    assert second.attempt == 2
    assert [i for i, _ in second.remaining] == [1, 2, 3, 4]
    assert [p for i, p in second.remaining] == [p for i, p in first.remaining if i > 0]
    zombie = [
        b.cases.renew_lease()(uc.RenewLeaseCommand(first.job_id, first.token)),
        b.cases.checkpoint_copy()(uc.CheckpointCopyCommand(first.job_id, first.token, 1, artifact(9))),
        b.cases.complete_job()(uc.CompleteJobCommand(first.job_id, first.token, "r-zombie")),
        b.cases.fail_job()(uc.FailJobCommand(first.job_id, first.token, "x", True, "f-zombie")),
    ]
    for write in zombie:
        with pytest.raises(LeaseLost):
            await write
    async with b.new_uow() as uow:
        assert await uow.refusals.count() == 4
        job = await uow.jobs.get(first.job_id)
        assert set(job.checkpoints) == {0}


async def test_a_takeover_is_told_how_the_copies_made_before_it_look(backend: Backend) -> None:
    b = backend
    await confirmed_order(b)
    (first,) = await b.cases.claim_job()(uc.ClaimJobCommand(WorkerId("a")))
    assert first.made_looks == ()
    # Hashes are 64-bit: the largest must come back exact, not as a float, through JSON and jsonb.
    looks = {0: (2**64 - 1, 0, 1 << 63, 12345), 1: (7, 7, 7, 7)}
    for index, look in looks.items():
        kept = attrs.evolve(artifact(index), quality=CopyQuality(0.97, 9.0, None, 0, look))
        await b.cases.checkpoint_copy()(uc.CheckpointCopyCommand(first.job_id, first.token, index, kept))
    given_up = CopyQuality(0.99, 0.5, None, 2, (1, 2, 3, 4))  # never delivered: nothing keeps away from it
    await b.cases.give_up_copy()(uc.GiveUpCopyCommand(first.job_id, first.token, 2, "matches_source", given_up))
    b.clock.advance(timedelta(seconds=31))
    (second,) = await b.cases.claim_job()(uc.ClaimJobCommand(WorkerId("b")))
    assert second.made_looks == tuple(looks.items())
    assert all(type(h) is int for _, look in second.made_looks for h in look)


async def test_completion_is_answered_from_its_receipt(backend: Backend) -> None:
    b = backend
    order_id = await confirmed_order(b, copies=1)
    (job,) = await b.cases.claim_job()(uc.ClaimJobCommand(WorkerId("a")))
    await b.cases.checkpoint_copy()(uc.CheckpointCopyCommand(job.job_id, job.token, 0, artifact(0)))
    command = uc.CompleteJobCommand(job.job_id, job.token, "receipt-1")
    first = await b.cases.complete_job()(command)
    assert await b.cases.complete_job()(command) == first
    with pytest.raises(ReceiptConflict):
        await b.cases.complete_job()(uc.CompleteJobCommand(job.job_id, "other-token", "receipt-1"))
    async with b.new_uow() as uow:
        assert (await uow.orders.get(order_id)).state is OrderState.DONE
    await b.cases.record_delivery()(uc.RecordDeliveryCommand(order_id, 0))
    assert await balance(b) == (45, 0, 5, 0)


async def test_attempts_run_out_and_the_order_is_refunded(backend: Backend) -> None:
    b = backend
    order_id = await confirmed_order(b, copies=5)
    for attempt in (1, 2, 3):
        (job,) = await b.cases.claim_job()(uc.ClaimJobCommand(WorkerId(f"w{attempt}")))
        assert job.attempt == attempt
        if attempt == 1:
            await b.cases.checkpoint_copy()(uc.CheckpointCopyCommand(job.job_id, job.token, 0, artifact(0)))
            await b.cases.record_delivery()(uc.RecordDeliveryCommand(order_id, 0))
        b.clock.advance(timedelta(seconds=31))
        await b.cases.expire_leases()()
    async with b.new_uow() as uow:
        assert (await uow.orders.get(order_id)).state is OrderState.FAILED
    assert await balance(b) == (46, 0, 4, 0)
    assert await b.cases.claim_job()(uc.ClaimJobCommand(WorkerId("late"))) == []


async def test_two_claimers_never_get_the_same_job(backend: Backend) -> None:
    b = backend
    for user in range(1, 7):
        await confirmed_order(b, copies=1, coins=5, user=UserId(user))
    claims = await asyncio.gather(
        *(b.cases.claim_job()(uc.ClaimJobCommand(WorkerId(f"w{i}"), limit=2)) for i in range(3))
    )
    ids = [job.job_id for batch in claims for job in batch]
    assert len(ids) == len(set(ids))
    assert len(ids) == 6


async def test_payments_credit_once_and_reconcile(backend: Backend) -> None:
    b = backend
    buy = uc.CreditPaymentCommand("charge-1", USER, 100, 50, "XTR")
    assert await b.cases.credit_payment()(buy)
    assert not await b.cases.credit_payment()(buy)
    with pytest.raises(PaymentMismatch):
        await b.cases.credit_payment()(uc.CreditPaymentCommand("charge-1", USER, 100, 60, "XTR"))
    b.provider.settled += [
        ProviderTransaction("charge-1", USER, 50, "XTR"),
        ProviderTransaction("charge-lost", USER, 100, "XTR"),
    ]
    result = await b.cases.reconcile_payments()()
    assert result.credited == ("charge-lost",)
    assert (await b.cases.reconcile_payments()()).report.clean
    assert await balance(b) == (320, 0, 0, 0)


async def test_capacity_is_a_limit_and_a_closed_order_frees_its_slot(backend: Backend) -> None:
    b = backend
    b.set_capacity(1)
    first = await confirmed_order(b, copies=1, coins=100)
    quote = await b.cases.quote_order()(uc.QuoteOrderCommand(USER, "s", 1))
    with pytest.raises(ServiceBusy):
        await b.cases.confirm_order()(uc.ConfirmOrderCommand(USER, quote.quote_id, quote.token))
    assert await balance(b) == (95, 5, 0, 0)
    await b.cases.cancel_order()(uc.CancelOrderCommand(USER, first))
    await b.cases.confirm_order()(uc.ConfirmOrderCommand(USER, quote.quote_id, quote.token))
    assert await balance(b) == (95, 5, 0, 0)


async def test_a_unit_of_work_is_all_or_nothing(backend: Backend) -> None:
    b = backend
    await b.cases.grant_coins()(uc.GrantCoinsCommand(USER, LotKind.START, 50, None))
    with pytest.raises(RuntimeError):
        async with b.new_uow() as uow:
            account = await uow.accounts.get(USER)
            account.reserve("o-1", 10, b.clock.now())
            raise RuntimeError("boom before commit")
    assert await balance(b) == (50, 0, 0, 0)


async def test_a_lost_race_is_a_conflict_not_a_lost_update(backend: Backend) -> None:
    b = backend
    if b.name != "memory":
        pytest.skip("PostgreSQL serialises one user's writers with a row lock instead (see concurrency tests)")
    await b.cases.grant_coins()(uc.GrantCoinsCommand(USER, LotKind.START, 50, None))
    async with b.new_uow() as one, b.new_uow() as two:
        (await one.accounts.get(USER)).reserve("o-1", 10, b.clock.now())
        (await two.accounts.get(USER)).reserve("o-2", 10, b.clock.now())
        await one.commit()
        with pytest.raises(Conflict):
            await two.commit()


async def test_only_the_owner_that_closed_a_job_may_repeat_its_acknowledgement(backend: Backend) -> None:
    b = backend
    order_id = await confirmed_order(b)
    (first,) = await b.cases.claim_job()(uc.ClaimJobCommand(WorkerId("a")))
    b.clock.advance(timedelta(seconds=31))
    (second,) = await b.cases.claim_job()(uc.ClaimJobCommand(WorkerId("b")))
    await b.cases.cancel_order()(uc.CancelOrderCommand(USER, order_id))
    await b.cases.acknowledge_cancel()(second.job_id, second.token, WorkerId("b"))
    await b.cases.acknowledge_cancel()(second.job_id, second.token, WorkerId("b"))  # a retry: answered
    with pytest.raises(LeaseLost):
        await b.cases.acknowledge_cancel()(first.job_id, first.token, WorkerId("a"))  # a zombie: refused
    async with b.new_uow() as uow:
        assert await uow.refusals.count() == 1
        assert (await uow.orders.get(order_id)).state is OrderState.CANCELLED


async def test_a_claim_skips_jobs_whose_source_does_not_fit(backend: Backend) -> None:
    b = backend
    await b.cases.grant_coins()(uc.GrantCoinsCommand(USER, LotKind.START, 50, None))
    for size in (5_000_000, 1_000):
        quote = await b.cases.quote_order()(uc.QuoteOrderCommand(USER, f"s{size}", 1, size))
        await b.cases.confirm_order()(uc.ConfirmOrderCommand(USER, quote.quote_id, quote.token))
    small = await b.cases.claim_job()(uc.ClaimJobCommand(WorkerId("small-disk"), 5, max_source_bytes=10_000))
    assert [job.source_key for job in small] == ["s1000"]
    big = await b.cases.claim_job()(uc.ClaimJobCommand(WorkerId("big-disk"), 5))
    assert [job.source_key for job in big] == ["s5000000"]
