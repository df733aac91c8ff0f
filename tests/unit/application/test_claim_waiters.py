"""Long-poll claims: parked claimers cost no claims while nothing happens, news wakes as
many as there is work, and every parked claimer gets an answer."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from videocopies.adapters.memory import InProcessNotifier
from videocopies.application.claims import ClaimWaiters
from videocopies.application.use_cases import ClaimedJob, ClaimJobCommand
from videocopies.domain.shared import JobId, OrderId, OwnerToken, WorkerId


class Queue:
    """Jobs with a source size; a claim takes the oldest that fits, and is counted."""

    def __init__(self) -> None:
        self.jobs: list[tuple[str, int]] = []
        self.claims: list[ClaimJobCommand] = []

    def add(self, job_id: str, size: int = 1) -> None:
        self.jobs.append((job_id, size))

    async def claim(self, command: ClaimJobCommand) -> list[ClaimedJob]:
        self.claims.append(command)
        await asyncio.sleep(0)  # a real claim is a round trip
        taken = []
        for job in list(self.jobs):
            if len(taken) < command.limit and (command.max_source_bytes is None or job[1] <= command.max_source_bytes):
                self.jobs.remove(job)
                taken.append(
                    ClaimedJob(JobId(job[0]), OrderId("o"), OwnerToken(f"t-{command.worker_id}"),
                               datetime.now(UTC), 1, "s", ())
                )
        return taken


@pytest.fixture
async def setup():  # type: ignore[no-untyped-def]
    queue, notifier = Queue(), InProcessNotifier()
    waiters = ClaimWaiters(queue.claim, notifier, safety_poll_s=30.0)
    await waiters.start()
    yield queue, notifier, waiters
    await waiters.stop()


async def _parked(waiters: ClaimWaiters, count: int) -> None:
    while waiters.parked < count:
        await asyncio.sleep(0.001)


async def test_parked_claimers_cost_one_look_and_news_wakes_one_per_job(setup) -> None:  # type: ignore[no-untyped-def]
    queue, notifier, waiters = setup
    claimers = [asyncio.create_task(waiters.claim(WorkerId(f"w{n}"), 1, None, 5.0)) for n in range(100)]
    await _parked(waiters, 100)
    await asyncio.sleep(0.05)
    assert len(queue.claims) == 1  # the first looked; the other 99 parked without asking

    queue.add("j1")
    queue.add("j2")
    notifier.job_available()
    await asyncio.sleep(0.05)
    answered = [task.result() for task in claimers if task.done()]
    assert sorted(job.job_id for jobs in answered for job in jobs) == ["j1", "j2"] and len(answered) == 2
    # The first look, two claims that found a job, and one empty look per concurrent round.
    assert len(queue.claims) <= 1 + 2 + 2
    assert waiters.parked == 98


async def test_a_claim_that_cannot_wait_always_looks(setup) -> None:  # type: ignore[no-untyped-def]
    queue, _notifier, waiters = setup
    assert await waiters.claim(WorkerId("w"), 1, None, 0.0) == ()
    queue.add("j1")  # arrived without news
    (job,) = await waiters.claim(WorkerId("w"), 1, None, 0.0)
    assert job.job_id == "j1"


async def test_a_job_too_big_for_the_first_claimer_goes_to_one_it_fits(setup) -> None:  # type: ignore[no-untyped-def]
    queue, notifier, waiters = setup
    small = asyncio.create_task(waiters.claim(WorkerId("small"), 1, 10, 5.0))
    await _parked(waiters, 1)
    big = asyncio.create_task(waiters.claim(WorkerId("big"), 1, 1000, 5.0))
    await _parked(waiters, 2)
    queue.add("large", size=500)
    notifier.job_available()
    (job,) = await asyncio.wait_for(big, 1.0)
    assert job.job_id == "large" and not small.done()


async def test_a_parked_claim_ends_empty_handed_when_its_wait_is_over(setup) -> None:  # type: ignore[no-untyped-def]
    _queue, _notifier, waiters = setup
    started = asyncio.get_running_loop().time()
    assert await waiters.claim(WorkerId("w"), 1, None, 0.1) == ()
    assert 0.07 <= asyncio.get_running_loop().time() - started < 0.5  # in the last quarter of its wait
    assert waiters.parked == 0


async def test_claims_parked_together_are_answered_spread_over_the_last_quarter_of_their_wait(  # type: ignore[no-untyped-def]
    setup,
) -> None:
    """A fleet that parked at once must not come back at once, every wait, for ever."""
    _queue, _notifier, waiters = setup
    loop = asyncio.get_running_loop()
    started = loop.time()

    async def answered_after() -> float:
        assert await waiters.claim(WorkerId("w"), 1, None, 0.4) == ()
        return loop.time() - started

    async def slept() -> float:
        await asyncio.sleep(0.4)
        return loop.time() - started

    # A plain sleep of the same wait, beside them: on a loaded machine (the suite on two CPUs) the
    # loop wakes late for both alike, so how late is judged against it, not against the clock.
    control = asyncio.ensure_future(slept())
    after = sorted(await asyncio.gather(*(answered_after() for _ in range(200))))
    assert after[0] >= 0.29 and after[-1] < max(0.6, await control + 0.2)
    assert after[-1] - after[0] >= 0.05  # not one wave
    assert sum(a < 0.35 for a in after) >= 40 and sum(a >= 0.35 for a in after) >= 40


async def test_stopping_answers_every_parked_claim_at_once(setup) -> None:  # type: ignore[no-untyped-def]
    _queue, _notifier, waiters = setup
    claimers = [asyncio.create_task(waiters.claim(WorkerId(f"w{n}"), 1, None, 30.0)) for n in range(10)]
    await _parked(waiters, 10)
    await waiters.stop()
    assert [await task for task in claimers] == [()] * 10


async def test_a_safety_poll_looks_only_when_the_peek_sees_work() -> None:
    queue, notifier = Queue(), InProcessNotifier()
    peeks = []

    async def peek() -> bool:
        peeks.append(1)
        return bool(queue.jobs)

    waiters = ClaimWaiters(queue.claim, notifier, safety_poll_s=0.05, peek=peek)
    await waiters.start()
    try:
        parked = asyncio.create_task(waiters.claim(WorkerId("w"), 1, None, 5.0))
        await _parked(waiters, 1)
        await asyncio.sleep(0.3)
        assert len(peeks) >= 3 and len(queue.claims) == 1  # glanced several times, claimed never
        queue.add("lost-news")  # work whose notice never came
        (job,) = await asyncio.wait_for(parked, 1.0)
        assert job.job_id == "lost-news"
    finally:
        await waiters.stop()
