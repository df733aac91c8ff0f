"""A lease: time-limited ownership of a job, fenced by an owner token."""

from __future__ import annotations

from datetime import datetime, timedelta

import attrs

from videocopies.domain.shared import OwnerToken, WorkerId


@attrs.frozen
class Lease:
    """Held by one worker until `lease_until`; every write must present `token`."""

    worker_id: WorkerId
    token: OwnerToken
    acquired_at: datetime
    lease_until: datetime
    attempt: int

    def is_expired(self, now: datetime) -> bool:
        return self.lease_until <= now

    def renewed(self, now: datetime, ttl: timedelta) -> Lease:
        return attrs.evolve(self, lease_until=Lease.renewed_until(now, ttl))

    @staticmethod
    def renewed_until(now: datetime, ttl: timedelta) -> datetime:
        """Until when a lease renewed at `now` runs."""
        return now + ttl
