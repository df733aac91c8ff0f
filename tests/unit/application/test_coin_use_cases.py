"""Granting coins and the sweep that expires them."""

from datetime import timedelta

from videocopies.application import use_cases as uc
from videocopies.domain.coins import LotKind
from videocopies.domain.shared import LotId, UserId

USER = UserId(1001)


async def test_a_grant_opens_the_account_with_a_lot_of_its_own_expiry(shop):
    lot_id = await shop.grant(50, valid_for=timedelta(days=30))

    lot = shop.store.accounts[USER].lot(lot_id)
    assert (lot.kind, lot.amount, lot.expires_at) == (LotKind.START, 50, shop.clock.now() + timedelta(days=30))
    assert shop.figures() == (50, 0, 0, 0)


async def test_a_grant_with_a_chosen_lot_id_is_made_once(shop):
    grant = shop.cases.grant_coins()
    command = uc.GrantCoinsCommand(USER, LotKind.REFERRAL, 10, None, lot_id=LotId("referral:42"))

    assert await grant(command) == "referral:42"
    assert await grant(command) == "referral:42"

    assert shop.figures() == (10, 0, 0, 0)


async def test_the_sweep_expires_lots_whose_time_has_come(shop):
    await shop.grant(50, valid_for=timedelta(days=1))
    await shop.grant(20, valid_for=None)
    await shop.grant(30, valid_for=timedelta(days=1), user=UserId(2002))
    await shop.order(copies=5)  # reserves 20 of the 50 expiring first

    shop.clock.advance(timedelta(days=1) - timedelta(seconds=1))
    assert await shop.cases.expire_coins()() == 0
    shop.clock.advance(timedelta(seconds=1))
    swept = await shop.cases.expire_coins()()

    assert swept == 30 + 30
    assert shop.figures() == (20, 20, 0, 30)
    assert shop.figures(UserId(2002)) == (0, 0, 0, 30)
    assert await shop.cases.expire_coins()() == 0
    lot_states = [(lot.available, lot.expired) for lot in shop.store.accounts[USER].lots]
    assert lot_states == [(0, 30), (20, 0)]
