"""Completions together: many jobs closed in one transaction, each fenced and answered on
its own; and the grouping that sends concurrent completions that way."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

import attrs

from videocopies.application.errors import ApplicationError, NotFound
from videocopies.application.ports import Clock, RefusedWrite, UnitOfWork
from videocopies.application.use_cases._common import UowFactory, close_order_for_job, load_job
from videocopies.domain.jobs import CopiesMissing, Job, LeaseLost
from videocopies.domain.receipts import Receipt, ReceiptConflict
from videocopies.domain.shared import DomainError, JobId, OwnerToken, WorkerId

# What one completion gets: its result, or the refusal to raise to its caller.
Outcome = dict[str, Any] | Exception


@attrs.frozen
class CompleteJobCommand:
    job_id: JobId
    token: OwnerToken
    receipt_id: str
    worker_id: WorkerId | None = None

    def request(self) -> dict[str, Any]:
        return {"op": "complete", "job_id": self.job_id, "token": self.token}


def completion_result(job: Job) -> dict[str, Any]:
    return {"job_id": job.job_id, "state": job.state.value, "copies": job.copies}


class CompleteJobs:
    """Close many jobs whose copies are all checkpointed in one transaction: one commit (one
    disk flush on a durable server) for the lot. Each is fenced on its own: a stale token, a
    lapsed lease, a missing copy or a receipt id reused for another request refuses that
    completion alone, and the rest commit. A completion whose receipt is stored, or recorded
    earlier in the same batch, is answered from it and never applied twice.

    `alone` completes one command in a transaction of its own; it answers every command left
    when something refuses the whole transaction (a concurrent writer won a row, an order in
    a state no completion expects), so each still gets the answer it would get alone."""

    def __init__(self, uow: UowFactory, clock: Clock, alone: Callable[[CompleteJobCommand], Awaitable[Any]]) -> None:
        self._uow, self._clock, self._alone = uow, clock, alone

    async def __call__(self, commands: Sequence[CompleteJobCommand]) -> list[Outcome]:
        now = self._clock.now()
        outcomes: dict[int, Outcome] = {}
        alone: set[int] = set()  # answered by the single path, which counts its own refusals
        todo = list(range(len(commands)))
        while todo:
            try:
                outcomes.update(await self._together([(i, commands[i]) for i in todo], now))
            except LeaseLost as lost:
                # The database's own fence: a lease ran out between our check and the write.
                hit = [i for i in todo if commands[i].job_id == lost.job_id]
                if not hit:
                    raise
                outcomes.update((i, lost) for i in hit)
                todo = [i for i in todo if i not in outcomes]
                continue
            except (ApplicationError, DomainError):
                for i in todo:
                    outcomes[i] = await _outcome(self._alone(commands[i]))
                    alone.add(i)
            break
        zombies = [
            (outcome, commands[i].worker_id)
            for i, outcome in outcomes.items()
            if isinstance(outcome, LeaseLost) and i not in alone
        ]
        await self._count_refusals(zombies, now)
        return [outcomes[i] for i in range(len(commands))]

    async def _together(self, items: list[tuple[int, CompleteJobCommand]], now: datetime) -> dict[int, Outcome]:
        async with self._uow() as uow:
            out = await self.within(uow, items, now)
            await uow.commit()
        return out

    async def within(
        self, uow: UnitOfWork, items: Sequence[tuple[int, CompleteJobCommand]], now: datetime,
        also_receipts: Sequence[str] = (),
    ) -> dict[int, Outcome]:
        """The completions inside a transaction the caller commits: each fenced and answered on
        its own (a refusal changes nothing); what would refuse them all is raised. The caller's
        `also_receipts` are read in the same round trip."""
        out: dict[int, Outcome] = {}
        # One round trip: the receipts, and the jobs with their orders and accounts, locked
        # in one order (ids sorted), so two batches never wait on each other in a cycle. A
        # replayed completion's rows are locked too, at no harm: it is the rare case.
        receipt_ids = [cmd.receipt_id for _, cmd in items]
        await uow.prefetch(
            receipts=[*receipt_ids, *also_receipts], jobs=sorted({cmd.job_id for _, cmd in items}),
            their_orders=True, their_accounts=True,
        )
        stored = await uow.receipts.get_many(receipt_ids)
        recorded: dict[str, Receipt] = {}
        closing: list[Job] = []
        for i, cmd in items:
            receipt = stored.get(cmd.receipt_id) or recorded.get(cmd.receipt_id)
            if receipt is not None:
                out[i] = _replay(receipt, cmd)
                continue
            try:
                job = await load_job(uow, cmd.job_id, cmd.worker_id, cmd.token)
                job.complete(cmd.token, now)
            except (LeaseLost, CopiesMissing, NotFound) as refused:
                out[i] = refused  # checked before anything changed: the job is untouched
                continue
            out[i] = result = completion_result(job)
            recorded[cmd.receipt_id] = Receipt.record(cmd.receipt_id, cmd.request(), result)
            closing.append(job)
        await _close_orders(uow, closing, now)
        for receipt in recorded.values():
            await uow.receipts.add(receipt)
        return out

    async def count_refusals(self, commands: Sequence[CompleteJobCommand], outcomes: Sequence[Outcome]) -> None:
        """The zombies among answered completions, counted as `__call__` counts its own."""
        zombies = [(o, cmd.worker_id) for cmd, o in zip(commands, outcomes, strict=True) if isinstance(o, LeaseLost)]
        await self._count_refusals(zombies, self._clock.now())

    async def _count_refusals(self, zombies: list[tuple[LeaseLost, WorkerId | None]], now: datetime) -> None:
        """Zombies' completions counted in one transaction of their own, as a single one is."""
        if not zombies:
            return
        async with self._uow() as uow:
            for lost, worker in zombies:
                await uow.refusals.add(RefusedWrite(lost.job_id, worker, "complete", lost.reason.value, now))
            await uow.commit()


def _replay(receipt: Receipt, cmd: CompleteJobCommand) -> Outcome:
    try:
        return dict(receipt.replay(cmd.request()))
    except ReceiptConflict as conflict:
        return conflict


async def _close_orders(uow: UnitOfWork, jobs: list[Job], now: datetime) -> None:
    for job in jobs:
        await close_order_for_job(uow, job, now)


class Grouped:
    """Concurrent completions committed together. A completion that finds a lane free goes at
    once, alone, so a lone one waits for nothing; those that arrive while every lane is busy
    wait for the next lane to free and go as one batch (at most `most`)."""

    def __init__(
        self,
        alone: Callable[[CompleteJobCommand], Awaitable[dict[str, Any]]],
        together: Callable[[Sequence[CompleteJobCommand]], Awaitable[list[Outcome]]],
        lanes: int = 2,
        most: int = 50,
    ) -> None:
        self._alone, self._together, self._lanes, self._most = alone, together, lanes, most
        self._busy = 0
        self._waiting: list[tuple[CompleteJobCommand, asyncio.Future[dict[str, Any]]]] = []
        self._groups: set[asyncio.Task[None]] = set()
        self.batches = 0  # groups of more than one sent so far

    async def __call__(self, command: CompleteJobCommand) -> dict[str, Any]:
        if self._busy < self._lanes:
            self._busy += 1
            try:
                return await self._alone(command)
            finally:
                self._lane_freed()
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting.append((command, answer))
        return await answer

    def _lane_freed(self) -> None:
        self._busy -= 1
        waiting = [(cmd, answer) for cmd, answer in self._waiting if not answer.done()]  # the gone are dropped
        group, self._waiting = waiting[: self._most], waiting[self._most :]
        if group:
            self._busy += 1
            task = asyncio.ensure_future(self._send(group))
            self._groups.add(task)
            task.add_done_callback(self._groups.discard)

    async def _send(self, group: list[tuple[CompleteJobCommand, asyncio.Future[dict[str, Any]]]]) -> None:
        commands = [cmd for cmd, _ in group]
        try:
            if len(commands) == 1:
                outcomes: Sequence[Outcome | BaseException] = [await _outcome(self._alone(commands[0]))]
            else:
                self.batches += 1
                outcomes = await self._together(commands)
        except BaseException as error:  # noqa: BLE001 - every caller in the group gets it
            outcomes = [error if isinstance(error, Exception) else asyncio.CancelledError()] * len(commands)
        finally:
            self._lane_freed()
        for (_, answer), outcome in zip(group, outcomes, strict=True):
            if answer.done():
                continue
            if isinstance(outcome, BaseException):
                answer.set_exception(outcome)
            else:
                answer.set_result(outcome)


async def _outcome(call: Awaitable[dict[str, Any]]) -> Outcome:
    try:
        return await call
    except Exception as error:  # noqa: BLE001 - handed to its caller as it was
        return error
