"""Duty leases (one edge polls Telegram at a time): the same cases in memory, on PostgreSQL
and through PgBouncer."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from videocopies.adapters.memory.duties import InMemoryDutyLeases
from videocopies.adapters.postgres.duties import PostgresDutyLeases
from videocopies.application.duties import HoldDuty
from videocopies.domain.duties import POLL_TELEGRAM

from .conftest import Backend

TTL = timedelta(seconds=10)


@pytest.fixture
def hold(backend: Backend) -> HoldDuty:
    service: Any = backend.service
    leases = InMemoryDutyLeases() if backend.name == "memory" else PostgresDutyLeases(service.gateways.pool())
    return HoldDuty(leases, backend.clock, TTL)


async def test_one_holder_at_a_time_and_a_takeover_after_the_lease(backend: Backend, hold: HoldDuty) -> None:
    clock = backend.clock
    first = await hold(POLL_TELEGRAM, "edge-a", "token-a" * 3)
    assert first.held_with("token-a" * 3, clock.now()) and first.term == 1
    other = await hold(POLL_TELEGRAM, "edge-b", "token-b" * 3)
    assert other.holder == "edge-a" and not other.held_with("token-b" * 3, clock.now())
    clock.advance(timedelta(seconds=6))
    renewed = await hold(POLL_TELEGRAM, "edge-a", "token-a" * 3)
    assert renewed.lease_until == clock.now() + TTL and renewed.term == 1
    clock.advance(timedelta(seconds=9))  # edge-a's lease has a second left
    assert (await hold(POLL_TELEGRAM, "edge-b", "token-b" * 3)).holder == "edge-a"
    clock.advance(timedelta(seconds=2))  # edge-a died: its lease ran out
    taken = await hold(POLL_TELEGRAM, "edge-b", "token-b" * 3)
    assert taken.holder == "edge-b" and taken.term == 2
    late = await hold(POLL_TELEGRAM, "edge-a", "token-a" * 3)  # edge-a wakes up: not its duty any more
    assert late.holder == "edge-b" and not late.held_with("token-a" * 3, clock.now())


async def test_a_restarted_holder_waits_like_anyone(backend: Backend, hold: HoldDuty) -> None:
    await hold(POLL_TELEGRAM, "edge-a", "before-restart-1")
    again = await hold(POLL_TELEGRAM, "edge-a", "after-restart-22")  # same node, new process
    assert not again.held_with("after-restart-22", backend.clock.now())


async def test_many_asking_at_once_get_one_holder(backend: Backend, hold: HoldDuty) -> None:
    tokens = [f"token-{n:012d}" for n in range(8)]
    answers = await asyncio.gather(*(hold(POLL_TELEGRAM, f"edge-{n}", t) for n, t in enumerate(tokens)))
    granted = [n for n, (a, t) in enumerate(zip(answers, tokens, strict=True)) if a.held_with(t, backend.clock.now())]
    assert len(granted) == 1
    assert {a.holder for a in answers} == {f"edge-{granted[0]}"}
