"""Long-poll claims that hold no SQL connection while they wait.

Parked claimers wait in memory. A wake-up (a notice of new work, or a slow safety poll)
starts a round: claimers are tried one after another, oldest first, and the first try that
finds nothing ends the round. So an empty queue costs one claim per wake-up, never one per
waiter, and a claimer arriving while the queue is known to be empty parks without asking.
A wake-up only means "try": every claim is still one transaction of ClaimJob.

A parked claim that finds nothing is answered at a random moment in the last quarter of
its wait, not at its end: a fleet that parked together (core started, or moved its nodes)
would otherwise come back together every `wait_s`, and each such wave of answers and new
claims held up the wake-ups and renewals behind it (bench/job_api.py).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable, Sequence

import attrs

from videocopies.application.ports import Notifier
from videocopies.application.use_cases import ClaimedJob, ClaimJobCommand
from videocopies.domain.shared import WorkerId

log = logging.getLogger(__name__)

Claim = Callable[[ClaimJobCommand], Awaitable[Sequence[ClaimedJob]]]
Peek = Callable[[], Awaitable[bool]]
ANSWER_SPREAD = 0.25  # an empty answer comes between 75 % and 100 % of the wait asked for


@attrs.define(eq=False)
class _Waiter:
    command: ClaimJobCommand
    answer: asyncio.Future[Sequence[ClaimedJob]]
    deadline: float
    trying: bool = False  # a claim is in flight for it: its answer must be awaited, not dropped
    gone: bool = False  # its caller left (a dropped connection)


class ClaimWaiters:
    def __init__(
        self,
        claim: Claim,
        notifier: Notifier,
        safety_poll_s: float = 10.0,
        concurrency: int = 2,
        peek: Peek | None = None,
        spread: Callable[[], float] | None = None,
    ) -> None:
        """`peek`: a cheap "is anything claimable?" asked before a safety-poll round;
        `spread`: the share of its wait a parked claim waits, 0.75-1.0 at random by default."""
        self._claim, self._notifier, self._peek = claim, notifier, peek
        self._spread = spread or (lambda: 1.0 - ANSWER_SPREAD * random.random())  # noqa: S311 - not a secret
        self._safety_poll_s, self._concurrency = safety_poll_s, concurrency
        self._waiters: collections.deque[_Waiter] = collections.deque()
        # The queue was seen empty at this notifier ticket, for sources up to this size
        # (None: any size), at this loop time. Until the ticket moves, asking again would
        # find nothing; after a safety-poll interval it is asked anyway (a notice may be lost).
        self._empty: tuple[int, int | None, float] | None = None
        self._rounds: asyncio.Task[None] | None = None
        self._looking = False  # a caller is looking right now; others arriving park instead
        self._kick = asyncio.Event()
        self._closed = False  # stopped: this core takes no more claims (it drains or moved)
        self.claims_tried = 0

    @property
    def parked(self) -> int:
        return len(self._waiters)

    async def start(self) -> None:
        self._rounds = asyncio.create_task(self._run(), name="videocopies-claim-rounds")

    async def stop(self) -> None:
        self._closed = True
        if self._rounds is not None:
            self._rounds.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._rounds
        while self._waiters:  # answered empty-handed: they will ask the next core
            waiter = self._waiters.popleft()
            if not waiter.answer.done():
                waiter.answer.set_result(())

    async def claim(
        self, worker_id: WorkerId, limit: int, max_source_bytes: int | None, wait_s: float,
        receipt_id: str | None = None,
    ) -> Sequence[ClaimedJob]:
        """`receipt_id`: the claim keeps a receipt of what it took (ClaimJobCommand); a caller
        sending it again after a lost answer asks with no wait, so it looks at once."""
        if self._closed:
            return ()  # the worker asks again, at another core
        command = ClaimJobCommand(worker_id, limit, max_source_bytes, receipt_id)
        # Callers that can wait let one of them look while the others park; one that cannot
        # wait always looks itself.
        can_wait = wait_s > 0
        if not can_wait or (not self._looking and not self._known_empty(max_source_bytes)):
            self._looking = self._looking or can_wait
            try:
                jobs = await self._try(command)
            finally:
                if can_wait:
                    self._looking = False
            if jobs:
                self._kick.set()  # there may be more: let the parked ones look
                return jobs
        if wait_s <= 0:
            return ()
        wait_s *= self._spread()
        loop = asyncio.get_running_loop()
        waiter = _Waiter(command, loop.create_future(), loop.time() + wait_s)
        self._waiters.append(waiter)
        try:
            done, _ = await asyncio.wait({waiter.answer}, timeout=wait_s)
            if not done and waiter.trying:
                # A claim is being made for it right now: taking the jobs is better than
                # leaving them leased to nobody until the lease runs out.
                await asyncio.wait({waiter.answer})
            return waiter.answer.result() if waiter.answer.done() else ()
        finally:
            waiter.gone = True
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)

    def _known_empty(self, max_source_bytes: int | None) -> bool:
        if self._empty is None:
            return False
        ticket, size, at = self._empty
        if ticket != self._notifier.ticket() or asyncio.get_running_loop().time() - at > self._safety_poll_s:
            return False
        return size is None or (max_source_bytes is not None and max_source_bytes <= size)

    async def _try(self, command: ClaimJobCommand) -> Sequence[ClaimedJob]:
        ticket = self._notifier.ticket()
        self.claims_tried += 1
        jobs = await self._claim(command)
        if not jobs:
            self._empty = (ticket, command.max_source_bytes, asyncio.get_running_loop().time())
        return jobs

    async def _run(self) -> None:
        news = True
        while True:
            ticket = self._notifier.ticket()
            self._kick.clear()
            if self._waiters and (news or await self._worth_a_look()):
                try:
                    await asyncio.gather(*(self._round() for _ in range(min(self._concurrency, len(self._waiters)))))
                except Exception as error:  # noqa: BLE001 - the next wake-up tries again
                    log.warning("claim round failed: %r", error)
                    await asyncio.sleep(0.5)
            woke = asyncio.ensure_future(self._notifier.wait(ticket, self._safety_poll_s))
            kicked = asyncio.ensure_future(self._kick.wait())
            try:
                await asyncio.wait({woke, kicked}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                woke.cancel()
                kicked.cancel()
            news = self._kick.is_set() or self._notifier.ticket() != ticket

    async def _worth_a_look(self) -> bool:
        """Only the safety poll asks: news of work is always worth a look."""
        if self._peek is None:
            return True
        try:
            return await self._peek()
        except Exception as error:  # noqa: BLE001 - when in doubt, look
            log.warning("queue peek failed: %r", error)
            return True

    async def _round(self) -> None:
        loop = asyncio.get_running_loop()
        while self._waiters:
            waiter = self._next()
            if waiter is None:
                return
            waiter.trying = True
            jobs: Sequence[ClaimedJob] = ()
            try:
                jobs = await self._try(waiter.command)
            finally:
                waiter.trying = False
                if waiter.gone:
                    for job in jobs:  # nobody to hand it to: its retry gets it by the receipt, if it had one;
                        # else the lease runs out and another takes it
                        log.warning(
                            "claimer of job %s left before its answer (receipt %s)", job.job_id,
                            waiter.command.receipt_id,
                        )
                elif jobs or loop.time() >= waiter.deadline:
                    waiter.answer.set_result(jobs)
                else:
                    self._waiters.appendleft(waiter)  # keeps its place; nothing to find now
            if jobs:
                continue
            bigger = self._bigger_than(waiter.command.max_source_bytes)
            if bigger is None:
                return
            self._waiters.remove(bigger)
            self._waiters.appendleft(bigger)  # a job too big for one may fit another

    def _next(self) -> _Waiter | None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.answer.done():
                return waiter
        return None

    def _bigger_than(self, size: int | None) -> _Waiter | None:
        if size is None:
            return None
        for waiter in self._waiters:
            limit = waiter.command.max_source_bytes
            if limit is None or limit > size:
                return waiter
        return None
