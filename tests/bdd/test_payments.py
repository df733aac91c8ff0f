"""Payments: credited once per charge, and reconciled with the provider's own list."""

from __future__ import annotations

from collections.abc import Awaitable

from pytest_bdd import given, parsers, scenarios, then, when

from videocopies.application import use_cases as uc
from videocopies.domain.coins import LotKind
from videocopies.domain.payments import ProviderTransaction

from .shop import USER, Shop

scenarios("payments")


def _settle_at_provider(shop: Shop, charge: str, stars: int) -> None:
    """The provider's own record of a payment: the world outside our service."""
    shop.service.gateways.payment_provider().settled.append(ProviderTransaction(charge, USER, stars, "XTR"))


def _notify(shop: Shop, charge: str, stars: int, coins: int) -> Awaitable[bool]:
    return shop.cases.credit_payment()(uc.CreditPaymentCommand(charge, USER, coins, stars, "XTR"))


@given(parsers.parse('the user paid {stars:d} Stars for {coins:d} coins with charge "{charge}"'))
def has_paid(shop: Shop, stars: int, coins: int, charge: str) -> None:
    _settle_at_provider(shop, charge, stars)
    assert shop.run(_notify(shop, charge, stars, coins))


@given(parsers.parse('the user paid {stars:d} Stars with charge "{charge}", but we were never told'))
def paid_unnoticed(shop: Shop, stars: int, charge: str) -> None:
    _settle_at_provider(shop, charge, stars)


@when(parsers.parse('the user pays {stars:d} Stars for {coins:d} coins with charge "{charge}"'))
def pays(shop: Shop, stars: int, coins: int, charge: str) -> None:
    _settle_at_provider(shop, charge, stars)
    shop.attempt(_notify(shop, charge, stars, coins))


@when(parsers.parse('we are told again that charge "{charge}" paid {stars:d} Stars for {coins:d} coins'))
def told_again(shop: Shop, charge: str, stars: int, coins: int) -> None:
    shop.attempt(_notify(shop, charge, stars, coins))


@when("the payments are reconciled")
def reconciled(shop: Shop) -> None:
    shop.attempt(shop.cases.reconcile_payments()())


@then("the first notification credits the coins and the second credits nothing")
def credited_once(shop: Shop) -> None:
    assert shop.answers[-2:] == [True, False]


@then(parsers.parse("the user holds {count:d} bought lot, of {coins:d} coins"))
def bought_lots(shop: Shop, count: int, coins: int) -> None:
    bought = [lot.amount for lot in shop.account().lots if lot.kind is LotKind.PURCHASE]
    assert bought == [coins] * count


@then(parsers.parse('charge "{charge}" is credited'))
def charge_credited(shop: Shop, charge: str) -> None:
    assert shop.outcome.credited == (charge,)


@then("nothing is credited")
def nothing_credited(shop: Shop) -> None:
    assert shop.outcome.credited == ()


@then(parsers.parse('charge "{charge}" is reported as matching no coin package'))
def no_package(shop: Shop, charge: str) -> None:
    assert shop.outcome.uncreditable == (charge,)
