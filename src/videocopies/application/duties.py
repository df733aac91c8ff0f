"""Holding a duty (see domain/duties.py): a node asks for it with its token, again and again
well inside the lease time; while it is granted the node performs the duty, and it stops
the moment a renewal fails or its lease would run out."""

from __future__ import annotations

from datetime import timedelta

from videocopies.application.ports import Clock, DutyLeases
from videocopies.domain.duties import DutyLease


class HoldDuty:
    def __init__(self, leases: DutyLeases, clock: Clock, ttl: timedelta) -> None:
        self._leases, self._clock, self.ttl = leases, clock, ttl

    async def __call__(self, duty: str, holder: str, token: str) -> DutyLease:
        """The duty's lease after this request: the caller's when `held_with(token)`."""
        now = self._clock.now()

        def decide(current: DutyLease | None) -> DutyLease | None:
            if current is None:
                return DutyLease.first(duty, holder, token, now, self.ttl)
            return current.renewed_or_taken(holder, token, now, self.ttl)

        lease = await self._leases.hold(duty, decide)
        assert lease is not None  # a first request always creates it
        return lease

    async def release(self, duty: str, token: str) -> bool:
        """Hand the duty on: its lease ends now if this token holds it. True when it did."""
        now = self._clock.now()
        released = False

        def decide(current: DutyLease | None) -> DutyLease | None:
            nonlocal released
            after = current.released(token, now) if current is not None else None
            released = after is not None
            return after

        await self._leases.hold(duty, decide)
        return released
