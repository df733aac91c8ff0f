"""Concurrent completions go together; a lone one goes at once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import pytest

from videocopies.application.use_cases.complete_jobs import CompleteJobCommand, Grouped, Outcome
from videocopies.domain.jobs import LeaseLossReason, LeaseLost
from videocopies.domain.shared import JobId, OwnerToken


def cmd(n: int) -> CompleteJobCommand:
    return CompleteJobCommand(JobId(f"j{n}"), OwnerToken(f"t{n}"), f"r{n}")


class Committer:
    """Stands in for the transactions: each takes `commit_s`, alone or as a batch."""

    def __init__(self, commit_s: float = 0.02, refuse: frozenset[str] = frozenset()) -> None:
        self.commit_s, self.refuse = commit_s, refuse
        self.sent: list[list[str]] = []
        self.open = 0
        self.most_open = 0

    def answer(self, c: CompleteJobCommand) -> Outcome:
        if c.job_id in self.refuse:
            return LeaseLost(c.job_id, LeaseLossReason.STALE_TOKEN)
        return {"job_id": c.job_id, "state": "done"}

    async def _commit(self, commands: Sequence[CompleteJobCommand]) -> list[Outcome]:
        self.sent.append([c.job_id for c in commands])
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        await asyncio.sleep(self.commit_s)
        self.open -= 1
        return [self.answer(c) for c in commands]

    async def alone(self, c: CompleteJobCommand) -> dict[str, Any]:
        (outcome,) = await self._commit([c])
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    async def together(self, commands: Sequence[CompleteJobCommand]) -> list[Outcome]:
        return await self._commit(commands)


async def test_a_lone_completion_goes_at_once_and_alone() -> None:
    committer = Committer(commit_s=0)
    grouped = Grouped(committer.alone, committer.together)
    for n in range(3):
        assert await grouped(cmd(n)) == {"job_id": f"j{n}", "state": "done"}
    assert committer.sent == [["j0"], ["j1"], ["j2"]]
    assert grouped.batches == 0


async def test_completions_arriving_while_the_lanes_are_busy_go_as_one_batch() -> None:
    committer = Committer()
    grouped = Grouped(committer.alone, committer.together, lanes=2)
    answers = await asyncio.gather(*(grouped(cmd(n)) for n in range(12)))
    assert answers == [{"job_id": f"j{n}", "state": "done"} for n in range(12)]
    # Two go at once; the other ten wait for the first lane to free, and go as one batch.
    assert committer.sent == [["j0"], ["j1"], [f"j{n}" for n in range(2, 12)]]
    assert committer.most_open == 2
    assert grouped.batches == 1


async def test_a_batch_is_no_larger_than_its_limit() -> None:
    committer = Committer()
    grouped = Grouped(committer.alone, committer.together, lanes=1, most=4)
    await asyncio.gather(*(grouped(cmd(n)) for n in range(10)))
    assert [len(batch) for batch in committer.sent] == [1, 4, 4, 1]
    assert committer.most_open == 1


async def test_each_waiter_gets_its_own_refusal() -> None:
    committer = Committer(refuse=frozenset({"j3"}))
    grouped = Grouped(committer.alone, committer.together, lanes=1)
    answers = await asyncio.gather(*(grouped(cmd(n)) for n in range(5)), return_exceptions=True)
    assert isinstance(answers[3], LeaseLost) and answers[3].job_id == "j3"
    assert [a for i, a in enumerate(answers) if i != 3] == [
        {"job_id": f"j{n}", "state": "done"} for n in (0, 1, 2, 4)
    ]


async def test_a_failed_batch_fails_each_of_its_waiters_and_the_next_still_goes() -> None:
    committer = Committer()
    calls = 0

    async def together(commands: Sequence[CompleteJobCommand]) -> list[Outcome]:
        nonlocal calls
        calls += 1
        if calls == 1:
            await asyncio.sleep(0.01)
            raise ConnectionError("database away")
        return await committer.together(commands)

    grouped = Grouped(committer.alone, together, lanes=1)
    first = await asyncio.gather(*(grouped(cmd(n)) for n in range(4)), return_exceptions=True)
    assert first[0] == {"job_id": "j0", "state": "done"}
    assert all(isinstance(a, ConnectionError) for a in first[1:])
    assert await asyncio.gather(*(grouped(cmd(n)) for n in range(4, 7))) == [
        {"job_id": f"j{n}", "state": "done"} for n in range(4, 7)
    ]


async def test_a_cancelled_batch_is_a_cancellation_to_each_of_its_waiters() -> None:
    committer = Committer()

    async def together(commands: Sequence[CompleteJobCommand]) -> list[Outcome]:
        await asyncio.sleep(0.01)
        raise asyncio.CancelledError

    grouped = Grouped(committer.alone, together, lanes=1)
    lone = asyncio.ensure_future(grouped(cmd(0)))
    await asyncio.sleep(0)
    waiters = [asyncio.ensure_future(grouped(cmd(n))) for n in (1, 2)]
    assert await lone == {"job_id": "j0", "state": "done"}
    for waiter in waiters:
        with pytest.raises(asyncio.CancelledError):
            await waiter


async def test_a_waiter_that_gave_up_is_left_out_of_its_batch() -> None:
    committer = Committer()
    grouped = Grouped(committer.alone, committer.together, lanes=1)
    lone = asyncio.ensure_future(grouped(cmd(0)))
    await asyncio.sleep(0)
    gone = asyncio.ensure_future(grouped(cmd(1)))
    kept = asyncio.ensure_future(grouped(cmd(2)))
    await asyncio.sleep(0)
    gone.cancel()
    await asyncio.gather(lone, kept)
    assert committer.sent == [["j0"], ["j2"]]


@pytest.mark.parametrize("lanes", [1, 2])
async def test_grouping_costs_a_lone_completion_well_under_a_millisecond(lanes: int) -> None:
    committer = Committer(commit_s=0)
    grouped = Grouped(committer.alone, committer.together, lanes=lanes)

    async def timed(call: Any, n: int) -> float:
        began = time.perf_counter()
        for i in range(n):
            await call(cmd(i))
        return (time.perf_counter() - began) / n

    direct, through = [], []
    for _ in range(5):  # interleaved, best of five: the machine is shared
        direct.append(await timed(committer.alone, 2000))
        through.append(await timed(grouped, 2000))
    assert min(through) - min(direct) < 0.0001, (min(direct), min(through))
