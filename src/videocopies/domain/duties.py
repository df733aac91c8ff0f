"""Duties only one node may perform at a time, such as polling Telegram for updates
(Telegram refuses two pollers, and two would race for the offset). A duty is held under a
lease like a job's: the holder renews it with its token, and another node may take it only
once the lease has run out, so a dead holder is replaced within one lease time."""

from __future__ import annotations

from datetime import datetime, timedelta

import attrs

POLL_TELEGRAM = "poll-telegram"


@attrs.frozen
class DutyLease:
    duty: str
    holder: str  # the node's name
    token: str  # one per process: a restarted holder takes the duty anew
    acquired_at: datetime
    lease_until: datetime
    term: int  # how many times the duty changed hands: fences a holder that came back late

    def is_live(self, now: datetime) -> bool:
        return self.lease_until > now

    def held_with(self, token: str, now: datetime) -> bool:
        return self.token == token and self.is_live(now)

    def renewed_or_taken(self, holder: str, token: str, now: datetime, ttl: timedelta) -> DutyLease | None:
        """This lease after `holder` asks for it with `token`: renewed when it is theirs and
        live, taken over when it has run out, None while another holds it."""
        if self.held_with(token, now):
            return attrs.evolve(self, lease_until=now + ttl)
        if self.is_live(now):
            return None
        return DutyLease(self.duty, holder, token, now, now + ttl, self.term + 1)

    def released(self, token: str, now: datetime) -> DutyLease | None:
        """This lease run out at once, when the caller holds it with `token` (a core that
        drains hands its duties on without making the next holder wait out the lease);
        None when it is not theirs to give."""
        if not self.held_with(token, now):
            return None
        return attrs.evolve(self, lease_until=now)

    @classmethod
    def first(cls, duty: str, holder: str, token: str, now: datetime, ttl: timedelta) -> DutyLease:
        return cls(duty, holder, token, now, now + ttl, 1)
