"""The whole application on the in-memory adapters, with a manual clock and sequential ids,
and a small shop that walks an order through its use cases."""

from datetime import timedelta

import pytest

from videocopies.adapters.memory import InMemoryStore, InMemoryUnitOfWork, ManualClock
from videocopies.application import use_cases as uc
from videocopies.application.ports import OutboxMessage
from videocopies.domain.coins import Balance, LotKind
from videocopies.domain.jobs import CopyArtifact, Job
from videocopies.domain.orders import OrderState
from videocopies.domain.pricing import Quote
from videocopies.domain.shared import LotId, OrderId, UserId, WorkerId
from videocopies.roles.containers import InMemoryService
from videocopies.settings import Settings

USER = UserId(1001)


def artifact(order_id: str, index: int, sha: str = "a") -> CopyArtifact:
    return CopyArtifact(f"copies/{order_id}/{index}.mp4", 1_000_000 + index, sha * 64)


class Shop:
    """Drives the use cases the way edge and the workers do, and reads the committed state.
    On the default settings an order of 5 copies costs 5 x 4 coins and a lease runs 30 seconds."""

    artifact = staticmethod(artifact)

    def __init__(self, service: InMemoryService) -> None:
        self.service = service
        self.cases = service.use_cases
        self.store: InMemoryStore = service.gateways.store()
        self.clock: ManualClock = service.gateways.clock()
        self.notifier = service.gateways.notifier()
        self._receipts = 0

    def uow(self) -> InMemoryUnitOfWork:
        return self.service.gateways.uow()

    async def grant(
        self, amount: int = 50, valid_for: timedelta | None = timedelta(days=30), user: UserId = USER
    ) -> LotId:
        return await self.cases.grant_coins()(uc.GrantCoinsCommand(user, LotKind.START, amount, valid_for))

    async def quote(self, copies: int = 5, user: UserId = USER) -> Quote:
        return await self.cases.quote_order()(uc.QuoteOrderCommand(user, "sources/u/clip.mp4", copies))

    async def order(self, copies: int = 5, user: UserId = USER) -> OrderId:
        """Quote and confirm: the coins are reserved and the job is queued."""
        quote = await self.quote(copies, user)
        return await self.cases.confirm_order()(uc.ConfirmOrderCommand(user, quote.quote_id, quote.token))

    async def claim(self, worker: str = "worker-a", limit: int = 1) -> list[uc.ClaimedJob]:
        return await self.cases.claim_job()(uc.ClaimJobCommand(WorkerId(worker), limit))

    async def claim_one(self, worker: str = "worker-a") -> uc.ClaimedJob:
        (claimed,) = await self.claim(worker)
        return claimed

    async def checkpoint(self, job: uc.ClaimedJob, index: int, sha: str = "a") -> bool:
        return await self.cases.checkpoint_copy()(
            uc.CheckpointCopyCommand(job.job_id, job.token, index, artifact(job.order_id, index, sha))
        )

    async def checkpoint_all(self, job: uc.ClaimedJob) -> None:
        for index, _ in job.remaining:
            await self.checkpoint(job, index)

    async def deliver(self, order_id: OrderId, index: int) -> int:
        return await self.cases.record_delivery()(uc.RecordDeliveryCommand(order_id, index))

    async def complete(self, job: uc.ClaimedJob, receipt_id: str | None = None) -> dict:
        command = uc.CompleteJobCommand(job.job_id, job.token, receipt_id or self._receipt())
        return await self.cases.complete_job()(command)

    async def fail(self, job: uc.ClaimedJob, retryable: bool, reason: str = "ffmpeg crashed") -> dict:
        return await self.cases.fail_job()(
            uc.FailJobCommand(job.job_id, job.token, reason, retryable, self._receipt())
        )

    async def cancel(self, order_id: OrderId, user: UserId = USER) -> OrderState:
        return await self.cases.cancel_order()(uc.CancelOrderCommand(user, order_id))

    def balance(self, user: UserId = USER) -> Balance:
        balance = self.store.accounts[user].balance(self.clock.now())
        assert balance.balanced
        return balance

    def figures(self, user: UserId = USER) -> tuple[int, int, int, int]:
        """available, reserved, debited, expired"""
        b = self.balance(user)
        return b.available, b.reserved, b.debited, b.expired

    def order_state(self, order_id: OrderId) -> OrderState:
        return self.store.orders[order_id].state

    def job_of(self, order_id: OrderId) -> Job:
        (job,) = [j for j in self.store.jobs.values() if j.order_id == order_id]
        return job

    def outbox(self, kind: str | None = None) -> list[OutboxMessage]:
        return [m for m in self.store.outbox.values() if kind is None or m.kind == kind]

    def _receipt(self) -> str:
        self._receipts += 1
        return f"receipt-{self._receipts}"


@pytest.fixture
def service() -> InMemoryService:
    return InMemoryService(settings=Settings(quote_secret=b"test-secret" * 3))


@pytest.fixture
def shop(service: InMemoryService) -> Shop:
    return Shop(service)
