"""Pricing: signed, expiring, single-use quotes on a versioned tariff."""

from __future__ import annotations

from pytest_bdd import given, parsers, scenarios, then, when

from videocopies.domain.pricing import PricingPolicy, QuoteKeys
from videocopies.domain.shared import UserId

from .conftest import confirm, quote
from .shop import Shop, override_pricing, tariff

scenarios("pricing")

ANOTHER_USER = UserId(2002)


def _changed_by_one_character(shop: Shop) -> str:
    token = shop.quote.token
    return ("A" if token[0] != "A" else "B") + token[1:]


def _signed_with_another_secret(shop: Shop) -> str:
    return shop.quote.signed(QuoteKeys.of(b"not-our-secret" * 3)).token


def _of_another_quote(shop: Shop) -> str:
    return shop.run(quote(shop, 1)).token


FORGERIES = {
    "with one character of its token changed": _changed_by_one_character,
    "with a token signed with another secret": _signed_with_another_secret,
    "with the token of another quote": _of_another_quote,
}


@when(parsers.parse("the user asks for {copies:d} copies"))
def asks_for(shop: Shop, copies: int) -> None:
    shop.attempt(quote(shop, copies))


@then(parsers.parse("the user is quoted {price:d} coins per copy, {total:d} coins in all"))
def quoted(shop: Shop, price: int, total: int) -> None:
    assert (shop.outcome.price_per_copy, shop.outcome.total) == (price, total)


@when(parsers.re(rf"the user confirms the quote (?P<forgery>{'|'.join(FORGERIES)})"))
def confirms_forged(shop: Shop, forgery: str) -> None:
    shop.attempt(confirm(shop, token=FORGERIES[forgery](shop)))


@when("another user confirms the quote")
def another_user_confirms(shop: Shop) -> None:
    shop.attempt(confirm(shop, user_id=ANOTHER_USER))


NEW_PRICES = (
    r"a new price list replaces the current one, and quotes on the old one are (?P<honoured>no longer|still) honoured:"
)


@given(parsers.re(NEW_PRICES))
def new_price_list(shop: Shop, honoured: str, datatable: list[list[str]]) -> None:
    old = shop.settings.pricing.current.version
    also = {old} if honoured == "still" else set()
    override_pricing(shop, PricingPolicy(tariff(old + 1, datatable), also_accepted=also))


@then("no job is waiting for a worker")
def no_job(shop: Shop) -> None:
    assert shop.store.jobs == {}


@then("only one job is waiting for a worker")
def one_job(shop: Shop) -> None:
    assert len(shop.store.jobs) == 1


@then(parsers.parse("only one order has coins set aside: {amount:d} coins"))
def one_reservation(shop: Shop, amount: int) -> None:
    assert [r.held for r in shop.account().reservations.values()] == [amount]
    assert shop.balance().reserved == amount
