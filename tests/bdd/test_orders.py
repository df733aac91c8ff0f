"""Orders: paid copy by delivered copy."""

from __future__ import annotations

from pytest_bdd import parsers, scenarios, then

from .shop import Shop

scenarios("orders")


@then(parsers.parse("each copy costs {price:d} coins and {total:d} coins are set aside for the order"))
def costs_and_sets_aside(shop: Shop, price: int, total: int) -> None:
    assert (shop.order().price_per_copy, shop.order().total) == (price, total)
    assert shop.account().reservation(shop.order_id).held == total


@then(parsers.parse('worker "{name}" is told to stop'))
def told_to_stop(shop: Shop, name: str) -> None:
    assert shop.outcome.cancel_requested


@then(parsers.parse("the first delivery costs {first:d} coins and the second costs nothing"))
def first_costs(shop: Shop, first: int) -> None:
    assert shop.answers[-2:] == [[first], [0]]


@then("the second delivery costs nothing")
def second_free(shop: Shop) -> None:
    assert shop.answers[-1] == [0]
