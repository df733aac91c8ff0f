"""A core that drains (stopping, or moved) takes no more claims: a claim that arrives after
the waiters stopped is answered empty at once, without taking a job, so the worker asks again
at another core."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from videocopies.adapters.memory import InProcessNotifier
from videocopies.application.claims import ClaimWaiters
from videocopies.application.use_cases import ClaimedJob, ClaimJobCommand
from videocopies.domain.shared import JobId, OrderId, OwnerToken, WorkerId


async def test_a_claim_after_the_waiters_stopped_takes_nothing_and_does_not_wait() -> None:
    queue = [JobId("j1")]
    claims: list[ClaimJobCommand] = []

    async def claim(command: ClaimJobCommand) -> list[ClaimedJob]:
        claims.append(command)
        return [ClaimedJob(queue.pop(), OrderId("o"), OwnerToken("t"), datetime.now(UTC), 1, "s", ())] if queue else []

    waiters = ClaimWaiters(claim, InProcessNotifier(), safety_poll_s=30.0)
    await waiters.start()
    before = await waiters.claim(WorkerId("w0"), 1, None, 0.0)
    queue.append(JobId("j2"))
    await waiters.stop()
    answer = await asyncio.wait_for(waiters.claim(WorkerId("w1"), 1, None, 20.0), timeout=1.0)
    assert [job.job_id for job in before] == ["j1"]  # it did take claims before
    assert answer == () and len(claims) == 1 and queue == ["j2"]
