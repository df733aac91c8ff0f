"""Small helpers shared by use cases: loading aggregates and settling an order's coins."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime

from videocopies.application.errors import NotFound
from videocopies.application.ports import RefusedWrite, UnitOfWork
from videocopies.application.use_cases.announcements import OrderSettled
from videocopies.application.use_cases.reason_codes import failure_code
from videocopies.domain.coins import CoinAccount
from videocopies.domain.jobs import Job, JobState, LeaseLossReason, LeaseLost
from videocopies.domain.orders import Order, OrderState
from videocopies.domain.shared import JobId, LotId, OrderId, OwnerToken, UserId, WorkerId

UowFactory = Callable[[], UnitOfWork]


async def load_order(uow: UnitOfWork, order_id: OrderId, user_id: UserId | None = None) -> Order:
    order = await uow.orders.get(order_id)
    if order is None or (user_id is not None and order.user_id != user_id):
        raise NotFound("order", str(order_id))
    return order


async def load_job(
    uow: UnitOfWork, job_id: JobId, holder: WorkerId | None = None, token: OwnerToken | None = None
) -> Job:
    """`holder`: the worker making a lease write. The owner token is the proof of holding;
    one presented by a worker other than the one it was issued to was stolen, and refused."""
    job = await uow.jobs.get(job_id)
    if job is None:
        raise NotFound("job", str(job_id))
    lease = job.lease
    if holder is not None and lease is not None and lease.token == token and lease.worker_id != holder:
        raise LeaseLost(job.job_id, LeaseLossReason.NOT_OWNER)
    return job


async def load_account(
    uow: UnitOfWork, user_id: UserId, create: bool = False, lots: Sequence[LotId] = ()
) -> CoinAccount:
    """The account with its working lots and `lots`: name every lot the use case addresses by id
    (a spent one is otherwise left in the store)."""
    account = await uow.accounts.get(user_id, lots)
    if account is None:
        if not create:
            raise NotFound("account", str(user_id))
        account = CoinAccount(user_id)
        await uow.accounts.add(account)
    return account


async def settle(uow: UnitOfWork, order: Order, released: int, now: datetime) -> None:
    """Return an order's undelivered coins to their lots and tell the user it is closed.
    A cancelled order returns everything still held; a done or failed one returns only
    `released`, keeping the price of rendered copies that are still being delivered."""
    account = await load_account(uow, order.user_id)
    reservation = account.reservation(order.order_id)
    if reservation is not None and reservation.open:
        full = order.state is OrderState.CANCELLED
        account.release(order.order_id, now, None if full else released)
    await uow.capacity.free(order.order_id)
    await uow.record(OrderSettled.of(order, released))


async def close_order_for_job(uow: UnitOfWork, job: Job, now: datetime) -> None:
    """A job reached a final state: bring its order along and settle the coins."""
    order = await load_order(uow, job.order_id)
    if order.is_final:
        return
    if job.state is JobState.CANCELLED:
        order.request_cancel()
        released = order.finish_cancel()
    elif job.state is JobState.FAILED:
        released = order.fail(failure_code(job.last_error))  # the raw error stays on the job
    elif job.state is JobState.DONE:
        released = order.complete()
    else:
        return
    await settle(uow, order, released, now)


@asynccontextmanager
async def lease_write(
    uow_factory: UowFactory, worker_id: WorkerId | None, operation: str, now: datetime
) -> AsyncIterator[UnitOfWork]:
    """The transaction of a lease holder's write. Refused because the lease is lost (the
    holder is a zombie), it is rolled back, counted in a transaction of its own, and the
    refusal goes on to the holder."""
    try:
        async with uow_factory() as uow:
            yield uow
    except LeaseLost as lost:
        await record_refusal(uow_factory, lost, worker_id, operation, now)
        raise


async def record_refusal(
    uow_factory: UowFactory,
    refused: LeaseLost,
    worker_id: WorkerId | None,
    operation: str,
    now: datetime,
) -> None:
    """Count a zombie's write in its own transaction: the refused one was rolled back."""
    async with uow_factory() as uow:
        await uow.refusals.add(
            RefusedWrite(refused.job_id, worker_id, operation, refused.reason.value, now)
        )
        await uow.commit()
