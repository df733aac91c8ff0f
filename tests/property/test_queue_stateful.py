"""Stateful properties of the job queue: workers (and their zombies) racing over leases."""

from __future__ import annotations

import asyncio
import itertools
from datetime import datetime, timedelta
from typing import Any

import attrs
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, multiple, precondition, rule

from videocopies.application import use_cases as uc
from videocopies.domain.coins import LotKind
from videocopies.domain.jobs import (
    CancelNotRequested,
    CheckpointConflict,
    CopiesMissing,
    CopyArtifact,
    CopyCheckpointed,
    JobFinished,
    JobState,
    LeaseLossReason,
    LeaseLost,
)
from videocopies.domain.orders import CopyState, OrderState
from videocopies.domain.shared import JobId, OrderId, OwnerToken, UserId, WorkerId
from videocopies.roles.containers import InMemoryService
from videocopies.settings import Settings

USER = UserId(7)
WORKERS = st.sampled_from([WorkerId("w1"), WorkerId("w2"), WorkerId("w3")])
TTL = timedelta(seconds=30)
MAX_ATTEMPTS = 3
# Around the lease ttl, so leases run out in the middle of the work.
ADVANCE = st.sampled_from([1, 5, 10, 20, 29, 30, 31, 45, 61])


@attrs.frozen
class Handle:
    """A worker's memory of one claim; it keeps using it after losing the lease (a zombie)."""

    worker: WorkerId
    job_id: JobId
    order_id: OrderId
    token: OwnerToken
    attempt: int
    copies: int


@attrs.define
class JobModel:
    job_id: JobId
    order_id: OrderId
    copies: int
    created_at: datetime
    state: JobState = JobState.QUEUED
    token: OwnerToken | None = None
    lease_until: datetime | None = None
    attempts: int = 0
    cancel_requested: bool = False
    checkpoints: dict[int, CopyArtifact] = attrs.Factory(dict)
    closed_by: OwnerToken | None = None  # the owner whose own write closed the job

    @property
    def final(self) -> bool:
        return self.state in (JobState.DONE, JobState.FAILED, JobState.CANCELLED)

    def lease_ran_out(self, now: datetime) -> bool:
        return self.state is JobState.LEASED and self.lease_until is not None and self.lease_until <= now

    def refusal(self, token: OwnerToken, now: datetime) -> LeaseLossReason | None:
        """Why a write with `token` would be refused now, or None when it is the live owner."""
        if self.state is not JobState.LEASED:
            return LeaseLossReason.NOT_LEASED
        if token != self.token:
            return LeaseLossReason.STALE_TOKEN
        if self.lease_ran_out(now):
            return LeaseLossReason.EXPIRED
        return None

    def finish(self, state: JobState, by: OwnerToken | None = None) -> None:
        if state is not JobState.QUEUED:
            self.closed_by = by
        self.state, self.token, self.lease_until = state, None, None

    def expire(self, now: datetime) -> bool:
        if not self.lease_ran_out(now):
            return False
        if self.cancel_requested:
            self.finish(JobState.CANCELLED)
        elif self.attempts >= MAX_ATTEMPTS:
            self.finish(JobState.FAILED)
        else:
            self.finish(JobState.QUEUED)
        return True


def artifact(order_id: OrderId, index: int, variant: int) -> CopyArtifact:
    """Variant 0 is the render every worker produces from the fixed plan; 1 is a divergent one."""
    return CopyArtifact(f"copies/{order_id}/{index}-{variant}.mp4", 1_000 + index + variant, f"{index + variant:064x}")


class JobQueueMachine(RuleBasedStateMachine):
    """Three workers claim, renew, checkpoint, complete, fail and acknowledge cancels while the
    clock runs their leases out and the user cancels; old handles keep writing as zombies."""

    handles = Bundle("handles")
    orders = Bundle("orders")

    def __init__(self) -> None:
        super().__init__()
        self.runner = asyncio.Runner()
        self.service = InMemoryService(
            settings=Settings(quote_secret=b"property-secret" * 3, lease_ttl=TTL, max_attempts=MAX_ATTEMPTS)
        )
        self.cases = self.service.use_cases
        self.store = self.service.gateways.store()
        self.clock = self.service.gateways.clock()
        self.jobs: dict[JobId, JobModel] = {}
        self.refusals: list[tuple[JobId, str, str]] = []  # job, operation, reason
        self.receipts: dict[str, dict[str, Any]] = {}  # accepted receipt id -> its result
        self.sent: dict[tuple[OwnerToken, str], list[tuple[str, bool]]] = {}
        self.tokens: list[OwnerToken] = []
        self.delivered: set[tuple[OrderId, int]] = set()
        self.receipt_ids = itertools.count(1)

    def run(self, coro):  # type: ignore[no-untyped-def]
        return self.runner.run(coro)

    def attempt(self, coro, *allowed: type[BaseException]):  # type: ignore[no-untyped-def]
        try:
            return self.run(coro)
        except allowed as refused:
            return refused

    @property
    def now(self) -> datetime:
        return self.clock.now()

    def fingerprint(self) -> tuple:
        """Everything a replayed receipt or a refused write must leave as it was."""
        return (
            tuple((j.job_id, j.version) for j in self.store.jobs.values()),
            tuple((o.order_id, o.version) for o in self.store.orders.values()),
            tuple((a.account_id, a.version) for a in self.store.accounts.values()),
            len(self.store.outbox), len(self.store.receipts),
        )

    def expect_refusal(self, handle: Handle, operation: str, outcome: object, reason: LeaseLossReason) -> None:
        assert isinstance(outcome, LeaseLost), (operation, outcome, reason)
        assert (outcome.job_id, outcome.reason) == (handle.job_id, reason), (outcome, reason)
        self.refusals.append((handle.job_id, operation, reason.value))
        event(f"{operation} refused: {reason.value}")

    # orders and claims

    @initialize(target=orders, copies=st.sampled_from([1, 5]))
    def start(self, copies: int):  # type: ignore[no-untyped-def]
        grant = uc.GrantCoinsCommand(USER, LotKind.MANUAL, 10_000, None)
        self.run(self.cases.grant_coins()(grant))
        return self.place_order(copies)

    @precondition(lambda self: len(self.jobs) < 4)
    @rule(target=orders, copies=st.sampled_from([1, 5]))
    def place_order(self, copies: int):  # type: ignore[no-untyped-def]
        quote = self.run(self.cases.quote_order()(uc.QuoteOrderCommand(USER, "sources/clip.mp4", copies)))
        order_id = self.run(self.cases.confirm_order()(uc.ConfirmOrderCommand(USER, quote.quote_id, quote.token)))
        (job,) = [j for j in self.store.jobs.values() if j.order_id == order_id]
        self.jobs[job.job_id] = JobModel(job.job_id, order_id, copies, self.now)
        return order_id

    @rule(target=handles, worker=WORKERS)
    def claim(self, worker: WorkerId):  # type: ignore[no-untyped-def]
        now = self.now
        ready = {j.job_id for j in self.jobs.values() if j.state is JobState.QUEUED or j.lease_ran_out(now)}
        live_before = {j.job_id: j.token for j in self.jobs.values() if j.state is JobState.LEASED}
        claimed = self.run(self.cases.claim_job()(uc.ClaimJobCommand(worker)))
        assert len(claimed) <= 1
        # A lapsed lease on its last attempt (or of a cancelled job) closes instead of being
        # claimed, and the claimer looks further; every job it closed was ready and due to close.
        closed = [j for j in sorted(ready) if self.store.jobs[j].is_final]
        for job_id in closed:
            assert self.jobs[job_id].expire(now) and self.jobs[job_id].final, job_id
            event("claim closed a job whose lease ran out")
        if not claimed:
            assert closed or not ready, f"claimed nothing while {sorted(ready)} were ready"
            return multiple()
        (c,) = claimed
        model = self.jobs[c.job_id]
        assert c.job_id in ready, "claimed a job that was live-leased or final"
        if model.expire(now):
            assert model.state is JobState.QUEUED
            event("claim took over a lapsed lease")
        assert c.token not in self.tokens and c.token not in live_before.values()
        self.tokens.append(c.token)
        model.attempts += 1
        model.state, model.token, model.lease_until = JobState.LEASED, c.token, now + TTL
        assert (c.attempt, c.lease_until) == (model.attempts, model.lease_until)
        assert [i for i, _ in c.remaining] == [i for i in range(model.copies) if i not in model.checkpoints]
        return Handle(worker, c.job_id, c.order_id, c.token, c.attempt, model.copies)

    @rule(
        target=handles, worker=WORKERS, render=st.integers(0, 5),
        finish=st.sampled_from(["complete", "fail", "hang"]),
    )
    def work(self, worker: WorkerId, render: int, finish: str):  # type: ignore[no-untyped-def]
        """One uninterrupted round of a worker: claim, render some copies, then finish or hang."""
        handle = self.claim(worker)
        if not isinstance(handle, Handle):
            return handle
        for index in range(min(render, handle.copies)):
            self.checkpoint(handle, index, 0)
        if finish == "complete":
            self.complete(handle, retry=False)
        elif finish == "fail":
            self.fail(handle, retry=False, retryable=render % 2 == 0)
        return handle

    # lease writes, from live owners and zombies alike

    @rule(handle=handles)
    def renew(self, handle: Handle) -> None:
        model, before = self.jobs[handle.job_id], self.fingerprint()
        reason = model.refusal(handle.token, self.now)
        cmd = uc.RenewLeaseCommand(handle.job_id, handle.token, handle.worker)
        outcome = self.attempt(self.cases.renew_lease()(cmd), LeaseLost)
        if reason is not None:
            self.expect_refusal(handle, "renew", outcome, reason)
            assert self.fingerprint() == before
            return
        model.lease_until = self.now + TTL
        assert (outcome.lease_until, outcome.cancel_requested) == (model.lease_until, model.cancel_requested)

    @rule(handle=handles, n=st.integers(0, 9), variant=st.sampled_from([0, 0, 0, 1]))
    def checkpoint(self, handle: Handle, n: int, variant: int) -> None:
        model, before = self.jobs[handle.job_id], self.fingerprint()
        index = n % handle.copies
        copy = artifact(handle.order_id, index, variant)
        reason = model.refusal(handle.token, self.now)
        cmd = uc.CheckpointCopyCommand(handle.job_id, handle.token, index, copy, handle.worker)
        outcome = self.attempt(self.cases.checkpoint_copy()(cmd), LeaseLost, CheckpointConflict)
        if reason is not None:
            self.expect_refusal(handle, "checkpoint", outcome, reason)
            assert self.fingerprint() == before
        elif index in model.checkpoints:
            if model.checkpoints[index] == copy:
                assert outcome is False
            else:
                assert isinstance(outcome, CheckpointConflict) and outcome.index == index
                event("checkpoint conflict")
            assert self.fingerprint() == before
        else:
            assert outcome is True
            model.checkpoints[index] = copy

    @rule(handle=handles)
    def render_all(self, handle: Handle) -> None:
        """A worker that is not interrupted checkpoints every copy it was given in a row."""
        for index in range(handle.copies):
            self.checkpoint(handle, index, 0)

    def _receipt(self, handle: Handle, op: str, retry: bool, retryable: bool = True) -> tuple[str, bool]:
        sent = self.sent.setdefault((handle.token, op), [])
        if retry and sent:
            return sent[-1]
        sent.append((f"{op}-{next(self.receipt_ids)}", retryable))
        return sent[-1]

    @rule(handle=handles, retry=st.booleans())
    def complete(self, handle: Handle, retry: bool) -> None:
        model, before = self.jobs[handle.job_id], self.fingerprint()
        receipt_id, _ = self._receipt(handle, "complete", retry)
        reason = model.refusal(handle.token, self.now)
        cmd = uc.CompleteJobCommand(handle.job_id, handle.token, receipt_id, handle.worker)
        outcome = self.attempt(self.cases.complete_job()(cmd), LeaseLost, CopiesMissing)
        if receipt_id in self.receipts:
            assert outcome == self.receipts[receipt_id], "a retried completion got another answer"
            assert self.fingerprint() == before, "a retried completion settled again"
            event("complete replayed from its receipt")
        elif reason is not None:
            self.expect_refusal(handle, "complete", outcome, reason)
            assert self.fingerprint() == before
        elif missing := tuple(i for i in range(model.copies) if i not in model.checkpoints):
            assert isinstance(outcome, CopiesMissing) and outcome.missing == missing
            assert self.fingerprint() == before
        else:
            assert outcome == {"job_id": handle.job_id, "state": "done", "copies": model.copies}
            self.receipts[receipt_id] = outcome
            model.finish(JobState.DONE, by=handle.token)

    @rule(batch=st.lists(st.tuples(handles, st.booleans()), min_size=1, max_size=4))
    def complete_together(self, batch: list[tuple[Handle, bool]]) -> None:
        """Completions committed as one batch (as core groups concurrent ones): each answered
        as it would be alone, in order, the refused ones changing nothing."""
        before, now = self.fingerprint(), self.now
        commands = [
            uc.CompleteJobCommand(h.job_id, h.token, self._receipt(h, "complete", retry)[0], h.worker)
            for h, retry in batch
        ]
        outcomes = self.run(self.cases.complete_job().together(commands))
        changed = False
        for (handle, _), cmd, outcome in zip(batch, commands, outcomes, strict=True):
            model = self.jobs[handle.job_id]
            reason = model.refusal(handle.token, now)
            if cmd.receipt_id in self.receipts:
                assert outcome == self.receipts[cmd.receipt_id], "a retried completion got another answer"
                event("complete replayed from its receipt in a batch")
            elif reason is not None:
                self.expect_refusal(handle, "complete", outcome, reason)
            elif missing := tuple(i for i in range(model.copies) if i not in model.checkpoints):
                assert isinstance(outcome, CopiesMissing) and outcome.missing == missing
            else:
                assert outcome == {"job_id": handle.job_id, "state": "done", "copies": model.copies}
                self.receipts[cmd.receipt_id] = outcome
                model.finish(JobState.DONE, by=handle.token)
                changed = True
        if not changed:
            assert self.fingerprint() == before, "a batch with nothing to apply changed something"
        event(f"completed together: {len(commands)}, {'some' if changed else 'none'} applied")

    @rule(handle=handles, retry=st.booleans(), retryable=st.booleans())
    def fail(self, handle: Handle, retry: bool, retryable: bool) -> None:
        model, before = self.jobs[handle.job_id], self.fingerprint()
        receipt_id, retryable = self._receipt(handle, "fail", retry, retryable)
        reason = model.refusal(handle.token, self.now)
        cmd = uc.FailJobCommand(handle.job_id, handle.token, "ffmpeg crashed", retryable, receipt_id, handle.worker)
        outcome = self.attempt(self.cases.fail_job()(cmd), LeaseLost)
        if receipt_id in self.receipts:
            assert outcome == self.receipts[receipt_id]
            assert self.fingerprint() == before
            event("fail replayed from its receipt")
        elif reason is not None:
            self.expect_refusal(handle, "fail", outcome, reason)
            assert self.fingerprint() == before
        else:
            if retryable and model.attempts < MAX_ATTEMPTS and not model.cancel_requested:
                model.finish(JobState.QUEUED)
            elif model.cancel_requested:
                model.finish(JobState.CANCELLED, by=handle.token)
            else:
                model.finish(JobState.FAILED, by=handle.token)
            assert outcome == {"job_id": handle.job_id, "state": model.state.value, "attempts": model.attempts}
            self.receipts[receipt_id] = outcome

    @rule(handle=handles)
    def acknowledge_cancel(self, handle: Handle) -> None:
        model, before = self.jobs[handle.job_id], self.fingerprint()
        reason = model.refusal(handle.token, self.now)
        call = self.cases.acknowledge_cancel()(handle.job_id, handle.token, handle.worker)
        outcome = self.attempt(call, LeaseLost, CancelNotRequested)
        if model.state is JobState.CANCELLED and handle.token == model.closed_by:
            # The closing owner's retry is answered quietly; anyone else is a zombie.
            assert outcome is None and self.fingerprint() == before
            event("acknowledge_cancel retried by the owner that closed the job")
        elif reason is not None:
            self.expect_refusal(handle, "acknowledge_cancel", outcome, reason)
            assert self.fingerprint() == before
        elif not model.cancel_requested:
            assert isinstance(outcome, CancelNotRequested)
            assert self.fingerprint() == before
        else:
            assert outcome is None
            model.finish(JobState.CANCELLED, by=handle.token)
            event("acknowledge_cancel accepted")

    # the sweep, the user and the clock

    @rule()
    def expire_leases(self) -> None:
        expected = sum(1 for j in self.jobs.values() if j.expire(self.now))
        assert self.run(self.cases.expire_leases()()) == expected

    @rule(order_id=orders)
    def cancel(self, order_id: OrderId) -> None:
        (model,) = [j for j in self.jobs.values() if j.order_id == order_id]
        was_final, before = model.final, self.fingerprint()
        state = self.run(self.cases.cancel_order()(uc.CancelOrderCommand(USER, order_id)))
        if was_final:
            assert self.fingerprint() == before
            assert state is self.store.orders[order_id].state
        elif model.state is JobState.QUEUED:
            model.finish(JobState.CANCELLED)
            assert state is OrderState.CANCELLED
        else:
            model.cancel_requested = True
            assert state is OrderState.CANCELLING
            event("cancel requested from a leased job")

    @rule(order_id=orders, repeat=st.booleans())
    def deliver(self, order_id: OrderId, repeat: bool) -> None:
        """The user receives every rendered copy; a repeated report charges nothing."""
        order = self.store.orders[order_id]
        for copy in order.copies:
            if copy.state is CopyState.RENDERED or (repeat and copy.state is not CopyState.PENDING):
                cmd = uc.RecordDeliveryCommand(order_id, copy.index)
                charged = self.run(self.cases.record_delivery()(cmd))
                if copy.state is CopyState.RENDERED:
                    assert charged == order.price_per_copy and (order_id, copy.index) not in self.delivered
                    self.delivered.add((order_id, copy.index))
                else:  # delivered before, or dropped by a cancel: never charged (again)
                    assert charged == 0

    @rule(seconds=ADVANCE)
    def advance(self, seconds: int) -> None:
        self.clock.advance(timedelta(seconds=seconds))

    # invariants

    @invariant()
    def jobs_follow_the_model(self) -> None:
        assert set(self.store.jobs) == set(self.jobs)
        for job in self.store.jobs.values():
            model = self.jobs[job.job_id]
            assert job.state is model.state, (job.state, model)
            assert job.attempts == model.attempts <= job.max_attempts == MAX_ATTEMPTS
            assert job.cancel_requested == model.cancel_requested
            assert (job.lease.token if job.lease else None) == model.token
            assert (job.lease.lease_until if job.lease else None) == model.lease_until
            # Each copy accepted once, and the stored artifact is the first one accepted.
            assert job.checkpoints == model.checkpoints
            if job.state is JobState.DONE:
                assert sorted(job.checkpoints) == list(range(job.copies))
        accepted = [(e.job_id, e.index) for e in self.store.published if isinstance(e, CopyCheckpointed)]
        assert len(accepted) == len(set(accepted)), "two accepted results for one copy"
        assert set(accepted) == {(j.job_id, i) for j in self.jobs.values() for i in j.checkpoints}

    @invariant()
    def no_job_finishes_twice(self) -> None:
        finished = [e.job_id for e in self.store.published if isinstance(e, JobFinished)]
        assert len(finished) == len(set(finished)), "a job was closed twice"
        done = {j.job_id for j in self.jobs.values() if j.state is JobState.DONE}
        assert done == {e.job_id for e in self.store.published if isinstance(e, JobFinished) and
                        e.state is JobState.DONE}
        for job in self.store.jobs.values():
            if job.state is JobState.DONE:  # closed by the owner whose token it was, never a stale one
                assert job.closed_by == self.jobs[job.job_id].closed_by is not None

    def teardown(self) -> None:
        for model in self.jobs.values():
            order = self.store.orders[model.order_id]
            event(f"ended with a {model.state.value} job and a {order.state.value} order")
        self.runner.close()

    @invariant()
    def one_live_owner_per_job(self) -> None:
        now = self.now
        assert len(set(self.tokens)) == len(self.tokens)
        for job in self.store.jobs.values():
            live = [
                t for t in self.tokens
                if job.state is JobState.LEASED and job.lease and job.lease.token == t and not job.lease.is_expired(now)
            ]
            assert len(live) <= 1

    @invariant()
    def every_refused_write_is_counted(self) -> None:
        logged = [(r.job_id, r.operation, r.reason) for r in self.store.refusals]
        assert logged == self.refusals
        assert self.run(self._refusal_count()) == len(self.refusals)

    async def _refusal_count(self) -> int:
        async with self.service.gateways.uow() as uow:
            return await uow.refusals.count()

    @invariant()
    def orders_follow_their_jobs(self) -> None:
        open_orders = {o.order_id for o in self.store.orders.values() if not o.is_final}
        assert self.store.slots == open_orders, "a capacity slot is held by exactly each open order"
        for model in self.jobs.values():
            order = self.store.orders[model.order_id]
            assert order.is_final == model.final, (order.state, model.state)
            if model.state is JobState.DONE:
                assert order.state is (OrderState.CANCELLED if model.cancel_requested else OrderState.DONE)
            elif model.state is JobState.FAILED:
                assert order.state is OrderState.FAILED
            elif model.state is JobState.CANCELLED:
                assert order.state is OrderState.CANCELLED
            elif model.cancel_requested:
                assert order.state is OrderState.CANCELLING

    @invariant()
    def coins_follow_deliveries(self) -> None:
        account = self.store.accounts[USER]
        balance = account.balance(self.now)
        assert balance.balanced
        for model in self.jobs.values():
            order = self.store.orders[model.order_id]
            reservation = account.reservations[order.order_id]
            delivered = sum(1 for o, _ in self.delivered if o == order.order_id)
            assert order.charged == delivered * order.price_per_copy == reservation.debited
            assert order.charged <= order.total
            if order.is_final:
                # Only copies rendered and still on their way stay reserved.
                assert reservation.held == order.price_per_copy * order.count(CopyState.RENDERED)
                if order.count(CopyState.RENDERED) == 0:
                    assert reservation.held == 0
            else:
                assert reservation.held == order.total - order.charged
        assert balance.debited == sum(self.store.orders[o].price_per_copy for o, _ in self.delivered)


TestJobQueueStateful = JobQueueMachine.TestCase
TestJobQueueStateful.settings = settings(max_examples=500, stateful_step_count=100, deadline=None)
