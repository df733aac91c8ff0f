"""The cap invariant, for any schedule: whatever order and timing invited users confirm their
first orders in, and however often they order, an inviter is rewarded for at most `total`
invited users ever and at most `per_day` in any 24 hours; each rewarded invitation pays both
sides once, and a capped one pays nobody."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from dependency_injector import providers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from videocopies.adapters.memory import ManualClock
from videocopies.application import use_cases as uc
from videocopies.domain.coins import GrantRules, LotKind, ReferralCaps, ReferralOutcome
from videocopies.domain.shared import LotId, UserId
from videocopies.roles.containers import InMemoryService
from videocopies.settings import Settings

INVITERS = [UserId(1), UserId(2)]
BONUS = 30

step = st.tuples(
    st.integers(0, 11),  # which invited user orders (it may order again)
    st.integers(0, 30 * 60),  # minutes that pass before it
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    schedule=st.lists(step, max_size=30),
    total=st.one_of(st.none(), st.integers(0, 8)),
    per_day=st.one_of(st.none(), st.integers(0, 4)),
)
def test_no_schedule_of_first_orders_gets_an_inviter_past_a_cap(
    schedule: list[tuple[int, int]], total: int | None, per_day: int | None
) -> None:
    asyncio.run(_run(schedule, ReferralCaps(total=total, per_day=per_day)))


async def _run(schedule: list[tuple[int, int]], caps: ReferralCaps) -> None:
    service = InMemoryService(settings=Settings(quote_secret=b"caps-secret" * 4, grants=GrantRules(referral_caps=caps)))
    clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))
    service.gateways.clock.override(providers.Object(clock))
    cases, store = service.use_cases, service.gateways.store()
    for inviter in INVITERS:
        await cases.grant_coins()(uc.GrantCoinsCommand(inviter, LotKind.MANUAL, 1, None, LotId(f"m-{inviter}")))
    invitees = [UserId(100 + n) for n in range(12)]
    for n, invitee in enumerate(invitees):
        await cases.grant_coins()(uc.GrantCoinsCommand(invitee, LotKind.MANUAL, 1000, None, LotId(f"m-{invitee}")))
        await cases.reward_referral()(invitee, INVITERS[n % 2])
    for who, minutes in schedule:
        clock.advance(timedelta(minutes=minutes))
        user = invitees[who]
        quote = await cases.quote_order()(uc.QuoteOrderCommand(user, f"sources/{user}/clip.mp4", 1))
        await cases.confirm_order()(uc.ConfirmOrderCommand(user, quote.quote_id, quote.token))

    for inviter in INVITERS:
        mine = [r for r in store.referrals.values() if r.inviter == inviter]
        rewarded = sorted(r.settled_at for r in mine if r.outcome is ReferralOutcome.REWARDED)
        assert caps.total is None or len(rewarded) <= caps.total
        if caps.per_day is not None:
            for at in rewarded:
                assert sum(1 for t in rewarded if at - timedelta(days=1) < t <= at) <= caps.per_day
        lots = [lot for lot in store.accounts[inviter].lots if lot.kind is LotKind.REFERRAL]
        assert sum(lot.amount for lot in lots) == BONUS * len(rewarded)
        for referral in mine:
            invited = [lot for lot in store.accounts[referral.invitee].lots if lot.kind is LotKind.REFERRAL]
            assert len(invited) == (1 if referral.outcome is ReferralOutcome.REWARDED else 0)
            assert (referral.outcome is None) == (all(who != referral.invitee - 100 for who, _ in schedule))
