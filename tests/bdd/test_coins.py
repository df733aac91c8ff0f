"""Coins: set aside soonest-expiring first, returned to their own lot with its own expiry."""

from __future__ import annotations

from datetime import timedelta

import attrs
from pytest_bdd import given, parsers, scenarios, then, when

from videocopies.application import use_cases as uc
from videocopies.domain.coins import LotKind, ReferralCaps
from videocopies.domain.shared import LotId, WorkerId

from .shop import USER, Shop, duration, override_settings

scenarios("coins")


def _grant(shop: Shop, name: str, amount: int, valid_for: timedelta | None) -> None:
    command = uc.GrantCoinsCommand(USER, LotKind.MANUAL, amount, valid_for, lot_id=LotId(name))
    shop.run(shop.cases.grant_coins()(command))


@given(parsers.parse('the user holds a lot "{name}" of {amount:d} coins expiring in {time}'))
def holds_expiring_lot(shop: Shop, name: str, amount: int, time: str) -> None:
    _grant(shop, name, amount, duration(time))


@given(parsers.parse('the user holds a lot "{name}" of {amount:d} coins that never expire'))
def holds_lasting_lot(shop: Shop, name: str, amount: int) -> None:
    _grant(shop, name, amount, None)


@when("the expiry sweep runs")
def expiry_sweep(shop: Shop) -> None:
    shop.attempt(shop.cases.expire_coins()())


@when(parsers.parse('{time} pass while worker "{name}" keeps checking in'))
def time_passes_while_working(shop: Shop, time: str, name: str) -> None:
    claimed, renew = shop.worker(name), shop.cases.renew_lease()
    end = shop.clock.now() + duration(time)
    while shop.clock.now() < end:
        shop.clock.advance(min(shop.settings.lease_ttl / 2, end - shop.clock.now()))
        if shop.attempt(renew(uc.RenewLeaseCommand(claimed.job_id, claimed.token, WorkerId(name)))) is None:
            return


@then("the order sets aside:")
def sets_aside(shop: Shop, datatable: list[list[str]]) -> None:
    _header, *rows = datatable
    holds = {hold.lot_id: hold.held for hold in shop.account().reservation(shop.order_id).holds}
    assert {lot: holds.get(lot, 0) for lot, _ in rows} == {lot: int(coins) for lot, coins in rows}


@then(parsers.parse('lot "{name}" has {amount:d} coins spent'))
def lot_spent(shop: Shop, name: str, amount: int) -> None:
    assert shop.account().lot(LotId(name)).debited == amount


@then(parsers.parse('lot "{name}" has {available:d} coins available and {expired:d} expired'))
def lot_available_and_expired(shop: Shop, name: str, available: int, expired: int) -> None:
    lot, now = shop.account().lot(LotId(name)), shop.clock.now()
    # As the user sees it: coins of a lot past its expiry are expired, whether swept yet or not.
    shown_available, shown_expired = (0, lot.available) if lot.is_expired(now) else (lot.available, 0)
    assert (shown_available, shown_expired + lot.expired) == (available, expired)


@then(parsers.parse('lot "{name}" has {available:d} coins available'))
def lot_available(shop: Shop, name: str, available: int) -> None:
    lot = shop.account().lot(LotId(name))
    assert lot.usable(shop.clock.now()) and lot.available == available


@then(parsers.parse('lot "{name}" still expires {time} after it was granted'))
def lot_keeps_expiry(shop: Shop, name: str, time: str) -> None:
    lot = shop.account().lot(LotId(name))
    assert lot.expires_at == lot.granted_at + duration(time)


# --- gifts: start, referral, manual ----------------------------------------------------------


@given("coins live:")
def coins_live(shop: Shop, datatable: list[list[str]]) -> None:
    assert shop.built is None, "the configuration is set before anything happens"
    _header, *rows = datatable
    validity = {LotKind(kind): None if days == "never" else timedelta(days=int(days)) for kind, days in rows}
    shop.settings = attrs.evolve(shop.settings, grants=attrs.evolve(shop.settings.grants, validity=validity))


@given("the user has started the bot")
@when("the user starts the bot")
@when("the user starts the bot again")
def user_starts(shop: Shop) -> None:
    shop.tell_bot(USER, "text", text="/start")


@given(parsers.parse('"{name}" has started the bot'))
def person_started(shop: Shop, name: str) -> None:
    shop.tell_bot(shop.person(name), "text", text="/start")


@given(parsers.parse('"{name}" has started the bot through the invite link of "{inviter}"'))
@when(parsers.parse('"{name}" starts the bot through the invite link of "{inviter}"'))
@when(parsers.parse('"{name}" starts the bot through the invite link of "{inviter}" again'))
def started_invited(shop: Shop, name: str, inviter: str) -> None:
    shop.tell_bot(shop.person(name), "text", text=f"/start ref_{shop.person(inviter)}")


@when(parsers.parse('"{inviter}" is rewarded for inviting "{invitee}"'))
def rewarded(shop: Shop, inviter: str, invitee: str) -> None:
    shop.attempt(shop.cases.reward_referral()(shop.person(invitee), shop.person(inviter)))


@when(parsers.parse('"{name}" confirms an order of {copies:d} copy'))
def person_orders(shop: Shop, name: str, copies: int) -> None:
    user = shop.person(name)
    quote = shop.run(shop.cases.quote_order()(uc.QuoteOrderCommand(user, f"sources/{user}/clip.mp4", copies)))
    shop.run(shop.cases.confirm_order()(uc.ConfirmOrderCommand(user, quote.quote_id, quote.token)))


@given(parsers.parse("an inviter is rewarded for at most {per_day:d} invited users a day"))
def referral_cap(shop: Shop, per_day: int) -> None:
    rules = attrs.evolve(shop.settings.grants, referral_caps=ReferralCaps(total=None, per_day=per_day))
    override_settings(shop, grants=rules)


@then(parsers.parse('"{name}" has {amount:d} coins available'))
def person_has(shop: Shop, name: str, amount: int) -> None:
    assert shop.store.accounts[shop.person(name)].balance(shop.clock.now()).available == amount


@when(parsers.parse('operator "{node}" grants the user {amount:d} coins because "{reason}"'))
def operator_grants(shop: Shop, node: str, amount: int, reason: str) -> None:
    valid_for = shop.settings.grants.valid_for(LotKind.MANUAL)
    command = uc.GrantCoinsCommand(USER, LotKind.MANUAL, amount, valid_for, LotId("manual:1"), node, reason)
    shop.attempt(shop.cases.grant_coins()(command))


@then(parsers.parse('the grant is recorded as given by "{node}" because "{reason}"'))
def grant_recorded(shop: Shop, node: str, reason: str) -> None:
    (record,) = shop.store.grants.values()
    lot = shop.account().lot(record.lot_id)
    assert (record.granted_by, record.reason, record.kind) == (node, reason, LotKind.MANUAL)
    assert lot.expires_at == lot.granted_at + timedelta(days=90)


@then(parsers.parse("the user is told they were given {amount:d} coins"))
def told_given(shop: Shop, amount: int) -> None:
    assert [m["amount"] for m in shop.told("coins_granted")] == [amount]


@given(parsers.parse("the user holds {amount:d} coins of kind {kind}"))
def holds_kind(shop: Shop, amount: int, kind: str) -> None:
    lot_kind = LotKind(kind)
    command = uc.GrantCoinsCommand(USER, lot_kind, amount, shop.settings.grants.valid_for(lot_kind))
    shop.run(shop.cases.grant_coins()(command))


@then(parsers.parse("the user is told {amount:d} coins expired"))
def told_expired(shop: Shop, amount: int) -> None:
    assert sum(m["amount"] for m in shop.told("coins_expired")) == amount
