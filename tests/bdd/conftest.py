"""Fixtures, the refusal guard, and the steps several contexts share.

Steps drive the use cases of an in-memory service; they read the store only to check.
A `When` step that is refused keeps the refusal as the outcome, and the next step must
be a `Then` that checks it: an unchecked refusal fails the scenario.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterator
from datetime import timedelta
from typing import Any

import attrs
import pytest
from pytest_bdd import given, parsers, then, when

from videocopies.application import use_cases as uc
from videocopies.application.errors import NotFound, ProviderUnavailable, RefundRefused
from videocopies.domain.coins import (
    AlreadyReferred,
    InsufficientCoins,
    LotKind,
    LotNotRefundable,
    ReferralLoop,
    SelfReferral,
)
from videocopies.domain.jobs import LeaseLost
from videocopies.domain.payments import AlreadyRefunded, PaymentMismatch
from videocopies.domain.pricing import (
    PricingPolicy,
    Quote,
    QuoteAlreadyUsed,
    QuoteExpired,
    QuoteForged,
    TariffRetired,
    UnsupportedCopyCount,
)
from videocopies.domain.receipts import ReceiptConflict
from videocopies.domain.shared import OrderId, UserId, WorkerId

from .shop import USER, Shop, artifact, checks_refusal, copy_numbers, duration, tariff


@pytest.fixture
def run() -> Iterator[Callable[[Awaitable[Any]], Any]]:
    with asyncio.Runner() as runner:
        yield runner.run


@pytest.fixture
def shop(run: Callable[[Awaitable[Any]], Any]) -> Shop:
    return Shop(run)


# --- the guard: a refusal is never swallowed ---------------------------------------------


def pytest_bdd_before_step(request, feature, scenario, step, step_func) -> None:  # type: ignore[no-untyped-def]
    shop: Shop = request.getfixturevalue("shop")
    if shop.unchecked is not None and not getattr(step_func, "checks_refusal", False):
        refused, shop.unchecked = shop.unchecked, None
        pytest.fail(f"a step was refused with {refused} and no step checked it before {step.name!r}")


def pytest_bdd_step_error(request, feature, scenario, step, step_func, step_func_args, exception) -> None:  # type: ignore[no-untyped-def]
    request.getfixturevalue("shop").failed = True


def pytest_bdd_after_scenario(request, feature, scenario) -> None:  # type: ignore[no-untyped-def]
    shop: Shop = request.getfixturevalue("shop")
    if shop.unchecked is not None and not shop.failed:
        pytest.fail(f"the scenario ended with a refusal no step checked: {shop.unchecked}")


# --- prices and coins --------------------------------------------------------------------


@given("the price list:")
def price_list(shop: Shop, datatable: list[list[str]]) -> None:
    assert shop.built is None, "the price list is set before anything happens"
    shop.settings = attrs.evolve(shop.settings, pricing=PricingPolicy(tariff(1, datatable)))


@given(parsers.parse("the user holds {amount:d} coins"))
@when(parsers.parse("the user is granted {amount:d} more coins"))
def holds_coins(shop: Shop, amount: int) -> None:
    if amount:
        shop.run(shop.cases.grant_coins()(uc.GrantCoinsCommand(USER, LotKind.START, amount, timedelta(days=30))))


@then(parsers.parse("the user's coins are:"))
def coins_are(shop: Shop, datatable: list[list[str]]) -> None:
    header, values = datatable
    expected = dict(zip(header, map(int, values), strict=True))
    b = shop.balance()
    actual = {"available": b.available, "set aside": b.reserved, "spent": b.debited, "expired": b.expired}
    assert actual == expected


@then(parsers.parse("the user has {amount:d} coins available"))
def coins_available(shop: Shop, amount: int) -> None:
    assert shop.balance().available == amount


@then("no coins are set aside")
def nothing_set_aside(shop: Shop) -> None:
    if USER in shop.store.accounts:
        assert shop.balance().reserved == 0
        assert shop.account().reservations == {}


@then(parsers.parse("{amount:d} coins are set aside for the order"))
def set_aside_for_order(shop: Shop, amount: int) -> None:
    reservation = shop.account().reservation(shop.order_id)
    assert reservation is not None and reservation.held == amount
    assert shop.balance().reserved == amount


# --- orders ------------------------------------------------------------------------------


def quote(shop: Shop, copies: int) -> Awaitable[Quote]:
    return shop.cases.quote_order()(uc.QuoteOrderCommand(USER, "sources/1001/clip.mp4", copies))


def confirm(shop: Shop, token: str | None = None, user_id: UserId = USER) -> Awaitable[OrderId]:
    assert shop.quote is not None
    token = shop.quote.token if token is None else token
    return shop.cases.confirm_order()(uc.ConfirmOrderCommand(user_id, shop.quote.quote_id, token))


async def _order(shop: Shop, copies: int) -> OrderId:
    shop.quote = await quote(shop, copies)
    shop.order_id = shop.quote.quote_id
    return await confirm(shop)


@given(parsers.re(r"the user has ordered (?P<copies>\d+) cop(y|ies)"))
def has_ordered(shop: Shop, copies: str) -> None:
    shop.run(_order(shop, int(copies)))


@when(parsers.re(r"the user orders (?P<copies>\d+) cop(y|ies)"))
def orders(shop: Shop, copies: str) -> None:
    shop.attempt(_order(shop, int(copies)))


@given(parsers.parse("the user was quoted {copies:d} copies"))
def was_quoted(shop: Shop, copies: int) -> None:
    shop.quote = shop.run(quote(shop, copies))
    shop.order_id = shop.quote.quote_id


@when(parsers.re(r"the user confirms the quote( again)?$"))
def confirms(shop: Shop) -> None:
    shop.attempt(confirm(shop))


@when(parsers.parse("{time} pass"))
def time_passes(shop: Shop, time: str) -> None:
    shop.clock.advance(duration(time))


@when("the user cancels the order")
def cancels(shop: Shop) -> None:
    shop.attempt(shop.cases.cancel_order()(uc.CancelOrderCommand(USER, shop.order_id)))


async def _receive(shop: Shop, numbers: list[int]) -> list[int]:
    record = shop.cases.record_delivery()
    return [await record(uc.RecordDeliveryCommand(shop.order_id, n - 1)) for n in numbers]


@given(parsers.re(r"the user has received cop(y|ies) (?P<numbers>[\d, and]+)$"))
def has_received(shop: Shop, numbers: str) -> None:
    shop.run(_receive(shop, copy_numbers(numbers)))


@when(parsers.re(r"the user receives cop(y|ies) (?P<numbers>[\d, and]+?)( again)?$"))
def receives(shop: Shop, numbers: str) -> None:
    shop.attempt(_receive(shop, copy_numbers(numbers)))


@then(parsers.re(r"the order (is|has) (?P<state>running|done|cancelled|failed)"))
def order_state(shop: Shop, state: str) -> None:
    assert shop.order().state.value == state


TOLD_CLOSED = (
    r"the user is told the order (is )?(?P<state>\w+): (?P<charged>\d+) coins charged and (?P<returned>\d+) returned"
)


@then(parsers.re(TOLD_CLOSED))
def told_closed(shop: Shop, state: str, charged: str, returned: str) -> None:
    (message,) = shop.closing_messages()
    assert (message["state"], message["charged"], message["released"]) == (state, int(charged), int(returned))


# --- workers -----------------------------------------------------------------------------


def _claim(shop: Shop, name: str) -> Awaitable[list[uc.ClaimedJob]]:
    return shop.cases.claim_job()(uc.ClaimJobCommand(WorkerId(name)))


def _remember(shop: Shop, name: str, claimed: list[uc.ClaimedJob] | None) -> None:
    shop.workers[name] = claimed[0] if claimed else None


@given(parsers.parse('worker "{name}" has taken the job'))
def has_taken(shop: Shop, name: str) -> None:
    _remember(shop, name, shop.run(_claim(shop, name)))
    assert shop.workers[name] is not None, f"worker {name} found no job to take"


@when(parsers.parse('worker "{name}" takes the job'))
def takes(shop: Shop, name: str) -> None:
    _remember(shop, name, shop.attempt(_claim(shop, name)))


async def _render(shop: Shop, name: str, numbers: list[int]) -> None:
    claimed, checkpoint = shop.worker(name), shop.cases.checkpoint_copy()
    for n in numbers:
        await checkpoint(
            uc.CheckpointCopyCommand(claimed.job_id, claimed.token, n - 1, artifact(shop, n, name), WorkerId(name))
        )


@given(parsers.re(r'worker "(?P<name>\w+)" has rendered cop(y|ies) (?P<numbers>[\d, and]+)$'))
def has_rendered(shop: Shop, name: str, numbers: str) -> None:
    shop.run(_render(shop, name, copy_numbers(numbers)))


@when(parsers.re(r'worker "(?P<name>\w+)" renders cop(y|ies) (?P<numbers>[\d, and]+)$'))
def renders(shop: Shop, name: str, numbers: str) -> None:
    shop.attempt(_render(shop, name, copy_numbers(numbers)))


@when(parsers.parse('worker "{name}" checks in'))
def checks_in(shop: Shop, name: str) -> None:
    claimed = shop.worker(name)
    shop.attempt(shop.cases.renew_lease()(uc.RenewLeaseCommand(claimed.job_id, claimed.token, WorkerId(name))))


@when(parsers.parse('worker "{name}" stops'))
def stops(shop: Shop, name: str) -> None:
    claimed = shop.worker(name)
    shop.attempt(shop.cases.acknowledge_cancel()(claimed.job_id, claimed.token, WorkerId(name)))


@when(parsers.parse('worker "{name}" reports the job finished with receipt "{receipt}"'))
@when(parsers.parse('worker "{name}" reports the job finished again with receipt "{receipt}"'))
def reports_finished(shop: Shop, name: str, receipt: str) -> None:
    claimed = shop.worker(name)
    command = uc.CompleteJobCommand(claimed.job_id, claimed.token, receipt, WorkerId(name))
    shop.attempt(shop.cases.complete_job()(command))


@when(parsers.parse('worker "{name}" goes silent until its lease runs out'))
def goes_silent(shop: Shop, name: str) -> None:
    shop.clock.set(shop.worker(name).lease_until + timedelta(seconds=1))


GIVES_UP = r'worker "(?P<name>\w+)" reports giving up on the job(?P<for_good> for good)? with receipt "(?P<receipt>.+)"'


@when(parsers.re(GIVES_UP))
def reports_giving_up(shop: Shop, name: str, for_good: str | None, receipt: str) -> None:
    claimed = shop.worker(name)
    command = uc.FailJobCommand(claimed.job_id, claimed.token, "gave up", not for_good, receipt, WorkerId(name))
    shop.attempt(shop.cases.fail_job()(command))


@when("the stalled-job sweep runs")
def stalled_job_sweep(shop: Shop) -> None:
    shop.attempt(shop.cases.expire_leases()())


# --- refusals, in the words of the features ----------------------------------------------

REASONS: dict[str, type[Exception]] = {
    "the quote has expired": QuoteExpired,
    "the quote is not genuine": QuoteForged,
    "the quote was already used": QuoteAlreadyUsed,
    "its tariff is no longer honoured": TariffRetired,
    "there is no such order for them": NotFound,
    "that number of copies is not offered": UnsupportedCopyCount,
    "it no longer holds the job": LeaseLost,
    "the receipt was given for another report": ReceiptConflict,
    "it does not match the payment already recorded": PaymentMismatch,
    "none of its coins may have been used": LotNotRefundable,
    "it was already refunded": AlreadyRefunded,
    "the provider could not be reached": ProviderUnavailable,
    "the provider refused it": RefundRefused,
    "a user cannot invite themselves": SelfReferral,
    "the user was already invited": AlreadyReferred,
    "the invitations would go in a circle": ReferralLoop,
}


@then(parsers.re(rf".+ is refused because (?P<reason>{'|'.join(map(re.escape, REASONS))})$"))
@checks_refusal
def refused_because(shop: Shop, reason: str) -> None:
    shop.refusal(REASONS[reason])


@then(parsers.parse("the order is refused because {missing:d} coins are missing"))
@checks_refusal
def refused_for_coins(shop: Shop, missing: int) -> None:
    assert shop.refusal(InsufficientCoins).short_by == missing
