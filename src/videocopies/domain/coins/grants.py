"""Grants: coins given rather than bought, each kind with its own expiry, and the referral
rule that rewards both sides once per invited user."""

from __future__ import annotations

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
class GrantRules:
    """How many coins each gift is worth and how long each kind of coin lives."""

    start_bonus: int = 50
    referral_bonus: int = 30  # to each side
    validity: Mapping[LotKind, timedelta | None] = attrs.field(factory=lambda: dict(DEFAULT_VALIDITY))

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


@attrs.frozen
class Referral:
    """One user brought in by another. Both get a referral bonus, once per invited user."""

    invitee: UserId
    inviter: UserId
    at: datetime

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
