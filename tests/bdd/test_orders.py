"""Orders: paid copy by delivered copy."""

from __future__ import annotations

from pytest_bdd import parsers, scenarios, then, when

from videocopies.adapters.screens import render
from videocopies.application import use_cases as uc
from videocopies.domain.quality import CopyQuality
from videocopies.domain.shared import WorkerId

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


@when(parsers.parse('worker "{name}" gives up copy {number:d} because every render stayed too close to the source'))
def gives_up_copy(shop: Shop, name: str, number: int) -> None:
    claimed = shop.worker(name)
    quality = CopyQuality(ssim=0.99, phash_distance=0.5, attempt=2)
    command = uc.GiveUpCopyCommand(claimed.job_id, claimed.token, number - 1, "matches_source", quality, WorkerId(name))
    shop.attempt(shop.cases.give_up_copy()(command))


@then(parsers.parse("the user is told copy {number:d} could not be made because it matched the source, "
                    "and {returned:d} coins were returned"))
def told_copy_failed(shop: Shop, number: int, returned: int) -> None:
    (message,) = [m for m in shop.store.outbox.values() if m.kind == "copy_failed"]
    assert (message.payload["index"], message.payload["reason"]) == (number - 1, "matches_source")
    assert message.payload["returned"] == returned
    assert "not charged" in render("copy_failed", message.payload, "en").text
