"""A core that drains hands its duties on: the holder's release ends the lease at once, so
another core takes the duty at its next request; nobody else can release it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from videocopies.adapters.memory.duties import InMemoryDutyLeases
from videocopies.adapters.postgres.duties import PostgresDutyLeases
from videocopies.application.duties import HoldDuty

from .conftest import Backend

TTL = timedelta(seconds=30)
DUTY = "object-lifecycle"


@pytest.fixture
def hold(backend: Backend) -> HoldDuty:
    service: Any = backend.service
    leases = InMemoryDutyLeases() if backend.name == "memory" else PostgresDutyLeases(service.gateways.pool())
    return HoldDuty(leases, backend.clock, TTL)


async def test_a_released_duty_is_taken_by_the_next_core_without_waiting_out_the_lease(
    backend: Backend, hold: HoldDuty
) -> None:
    now = backend.clock.now
    assert (await hold(DUTY, "core-a", "token-a" * 3)).held_with("token-a" * 3, now())
    assert not (await hold(DUTY, "core-b", "token-b" * 3)).held_with("token-b" * 3, now())
    assert await hold.release(DUTY, "token-a" * 3)
    taken = await hold(DUTY, "core-b", "token-b" * 3)
    assert taken.held_with("token-b" * 3, now()) and taken.term == 2


async def test_only_the_holder_can_release_a_duty(backend: Backend, hold: HoldDuty) -> None:
    now = backend.clock.now
    await hold(DUTY, "core-a", "token-a" * 3)
    assert not await hold.release(DUTY, "token-b" * 3)
    assert not await hold.release("never-held", "token-a" * 3)
    assert not (await hold(DUTY, "core-b", "token-b" * 3)).held_with("token-b" * 3, now())
