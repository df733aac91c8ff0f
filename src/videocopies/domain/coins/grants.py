"""Grants: coins given rather than bought, each kind with its own expiry, and the referral
rule: both sides are rewarded once per invited user, when that user confirms a first order,
and an inviter only up to the caps (a fake account costs nothing until it orders)."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

import attrs

from videocopies.domain.coins.lot import LotKind
from videocopies.domain.shared import DomainError, LotId, UserId

DEFAULT_VALIDITY: Mapping[LotKind, timedelta | None] = {
    LotKind.START: timedelta(days=30),
    LotKind.REFERRAL: timedelta(days=60),
    LotKind.MANUAL: timedelta(days=90),
    LotKind.PURCHASE: None,  # bought coins never expire
}


@attrs.frozen
class InviterRewards:
    """How many invited users an inviter was rewarded for: ever, and in the last day."""

    total: int
    last_day: int


@attrs.frozen
class ReferralCaps:
    """The most invited users one inviter is rewarded for (None: no cap)."""

    total: int | None = 20
    per_day: int | None = 5

    def allow(self, rewarded: InviterRewards) -> bool:
        return (self.total is None or rewarded.total < self.total) and (
            self.per_day is None or rewarded.last_day < self.per_day
        )


@attrs.frozen
class GrantRules:
    """How many coins each gift is worth and how long each kind of coin lives."""

    start_bonus: int = 50
    referral_bonus: int = 30  # to each side
    validity: Mapping[LotKind, timedelta | None] = attrs.field(factory=lambda: dict(DEFAULT_VALIDITY))
    referral_caps: ReferralCaps = ReferralCaps()

    def valid_for(self, kind: LotKind) -> timedelta | None:
        return self.validity.get(kind, DEFAULT_VALIDITY[kind])

    def expires_at(self, kind: LotKind, now: datetime) -> datetime | None:
        valid_for = self.valid_for(kind)
        return None if valid_for is None else now + valid_for


@attrs.define
class SelfReferral(DomainError):
    user_id: UserId


@attrs.define
class AlreadyReferred(DomainError):
    invitee: UserId
    inviter: UserId


@attrs.define
class ReferralLoop(DomainError):
    """The inviter was itself brought in, directly or through others, by the invitee."""

    invitee: UserId
    inviter: UserId


@attrs.define
class UnknownInviter(DomainError):
    inviter: UserId


@attrs.define
class ReferralSettled(DomainError):
    invitee: UserId
    outcome: ReferralOutcome


class ReferralOutcome(enum.Enum):
    REWARDED = "rewarded"  # both sides got the bonus
    CAPPED = "capped"  # the inviter had reached a cap: nobody got it


@attrs.frozen
class Referral:
    """One user brought in by another. Nothing is given at arrival; the invited user's first
    confirmed order settles it once: both get the bonus, unless the inviter is at a cap."""

    invitee: UserId
    inviter: UserId
    at: datetime
    outcome: ReferralOutcome | None = None  # None: the invited user has not ordered yet
    settled_at: datetime | None = None

    @classmethod
    def admit(
        cls,
        invitee: UserId,
        inviter: UserId,
        now: datetime,
        *,
        inviter_known: bool,
        invited_before_by: UserId | None,
        inviter_chain: Sequence[UserId],
    ) -> Referral:
        """`inviter_chain`: who invited the inviter, who invited them, and so on."""
        if invitee == inviter:
            raise SelfReferral(invitee)
        if invited_before_by is not None:
            raise AlreadyReferred(invitee, invited_before_by)
        if not inviter_known:
            raise UnknownInviter(inviter)
        if invitee in inviter_chain:
            raise ReferralLoop(invitee, inviter)
        return cls(invitee, inviter, now)

    def settle(self, rewarded: InviterRewards, caps: ReferralCaps, now: datetime) -> Referral:
        """The invited user confirmed a first order: rewarded, or capped for the inviter."""
        if self.outcome is not None:
            raise ReferralSettled(self.invitee, self.outcome)
        outcome = ReferralOutcome.REWARDED if caps.allow(rewarded) else ReferralOutcome.CAPPED
        return attrs.evolve(self, outcome=outcome, settled_at=now)

    @property
    def invitee_lot(self) -> LotId:
        # Named after the invited user, so no second bonus can ever be granted for them.
        return LotId(f"ref:{self.invitee}:invited")

    @property
    def inviter_lot(self) -> LotId:
        return LotId(f"ref:{self.invitee}:inviter")


def parse_invite(argument: str) -> UserId | None:
    """The start parameter of an invite link, `ref_<user id>`."""
    code = argument.removeprefix("ref_")
    if code == argument or not code.isdigit() or len(code) > 15:
        return None
    return UserId(int(code))
