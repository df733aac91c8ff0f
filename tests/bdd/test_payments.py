"""Payments: credited once per charge, and reconciled with the provider's own list."""

from __future__ import annotations

from collections.abc import Awaitable

from pytest_bdd import given, parsers, scenarios, then, when

from videocopies.adapters.screens import render
from videocopies.application import use_cases as uc
from videocopies.application.ports import PaidInvoice
from videocopies.domain.coins import LotKind
from videocopies.domain.payments import CoinPackage, OfferWithdrawn, PackageCatalog, ProviderTransaction
from videocopies.domain.shared import UserId

from .shop import USER, Shop, checks_refusal, override_settings

PACKAGES = {50: 100, 100: 220, 250: 600}

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


# --- buying through the bot ----------------------------------------------------------------


@given("the user has started the bot")
def started(shop: Shop) -> None:
    shop.tell_bot(USER, "text", text="/start")


@given(parsers.parse("the user asked to buy the package of {stars:d} Stars"))
@when(parsers.parse("the user asks to buy the package of {stars:d} Stars"))
def asks_to_buy(shop: Shop, stars: int) -> None:
    shop.tell_bot(USER, "text", text="/buy")
    (packages,) = shop.told("packages")[-1:]
    assert [stars, PACKAGES[stars]] in packages["packages"]
    shop.tell_bot(USER, "button", data=f"b:{stars}")
    (shop.invoice,) = [m.payload for m in shop.store.outbox.values() if m.kind == "invoice"][-1:]


@then(parsers.parse("the user gets an invoice of {stars:d} Stars for {coins:d} coins"))
def gets_invoice(shop: Shop, stars: int, coins: int) -> None:
    screen = render("invoice", shop.invoice, "en")
    assert screen.invoice is not None
    assert (screen.invoice.stars, screen.invoice.title) == (stars, f"{coins} coins")


@when("Telegram asks whether that invoice may still be paid")
def pre_checkout(shop: Shop) -> None:
    invoice = shop.invoice
    shop.attempt(_check(shop, invoice["offer"], invoice["stars"]))


async def _check(shop: Shop, offer: str, stars: int) -> CoinPackage:
    return shop.settings.packages.check(offer, "XTR", stars)


@then("the payment is allowed")
def allowed(shop: Shop) -> None:
    assert isinstance(shop.outcome, CoinPackage)


@then("the payment is declined because the offer has changed")
@checks_refusal
def declined(shop: Shop) -> None:
    shop.refusal(OfferWithdrawn)


@given(parsers.parse("the coin packages change to: {stars:d} Stars buy {coins:d} coins"))
@when(parsers.parse("the coin packages change to: {stars:d} Stars buy {coins:d} coins"))
def packages_change(shop: Shop, stars: int, coins: int) -> None:
    override_settings(shop, packages=PackageCatalog.of([CoinPackage(stars, coins)]))


def _settles(shop: Shop, charge: str) -> None:
    invoice = shop.invoice
    if not any(tx.external_id == charge for tx in shop.service.gateways.payment_provider().settled):
        shop.service.gateways.payment_provider().settled.append(
            ProviderTransaction(charge, USER, invoice["stars"], "XTR", invoice["offer"])
        )


@when(parsers.parse('Telegram tells us the user paid that invoice with charge "{charge}"'))
def told_paid(shop: Shop, charge: str) -> None:
    _settles(shop, charge)
    invoice = shop.invoice
    shop.tell_bot(USER, "payment", payment=PaidInvoice(charge, invoice["stars"], "XTR", invoice["offer"]))


@given(parsers.parse('the user paid that invoice with charge "{charge}", but Telegram\'s notification was lost'))
def paid_unnotified(shop: Shop, charge: str) -> None:
    _settles(shop, charge)


@given(parsers.parse("{count:d} users have each asked to buy the package of {stars:d} Stars"))
def many_ask_to_buy(shop: Shop, count: int, stars: int) -> None:
    for n in range(count):
        user = shop.person(f"buyer {n}")
        shop.tell_bot(user, "text", text="/buy")
        shop.tell_bot(user, "button", data=f"b:{stars}")
        (shop.buyers[user],) = [m.payload for m in shop.store.outbox.values()
                                if m.kind == "invoice" and m.user_id == user]


@when("Telegram tells us at the same moment that each of them paid that invoice")
def many_told_paid(shop: Shop) -> None:
    provider = shop.service.gateways.payment_provider()
    paid = _settled_for_buyers(shop)
    shop.reads_before = provider.reads
    shop.tell_bot_at_once([(user, "payment", {"payment": payment}) for user, payment in paid.items()])


@given("Telegram takes a second to answer each read of its list of payments")
def provider_slow(shop: Shop) -> None:
    shop.service.gateways.payment_provider().answer_after_s = 1.0


@when("Telegram tells us at the same moment that each of them paid that invoice, and then a new user sends /start")
def many_told_paid_then_start(shop: Shop) -> None:
    provider = shop.service.gateways.payment_provider()
    paid = _settled_for_buyers(shop)
    shop.reads_before = provider.reads
    newcomer = shop.person("newcomer")

    def everyone_answered() -> bool:
        return bool(_sent_to(shop, newcomer)) and all(shop.told("coins_credited", user) for user in shop.buyers)

    shop.tell_running_bot(
        [(user, "payment", {"payment": payment}) for user, payment in paid.items()],
        then=(newcomer, "text", {"text": "/start"}),
        taken=lambda: provider.reads > shop.reads_before,
        until=everyone_answered,
    )


@then("the new user is answered before any of them is told coins were added")
def newcomer_first(shop: Shop) -> None:
    (first, *_) = _sent_to(shop, shop.person("newcomer"))
    credited = [i for i, m in shop.store.outbox.items() if m.payload.get("screen") == "coins_credited"]
    assert len(credited) == len(shop.buyers) and first < min(credited), (first, credited)


def _sent_to(shop: Shop, user: UserId) -> list[int]:
    return sorted(i for i, m in shop.store.outbox.items() if m.user_id == user)


def _settled_for_buyers(shop: Shop) -> dict[UserId, PaidInvoice]:
    """Each buyer's invoice paid at Telegram: listed by the provider; the notices to tell us."""
    provider = shop.service.gateways.payment_provider()
    paid = {user: PaidInvoice(f"ch-{user}", i["stars"], "XTR", i["offer"]) for user, i in shop.buyers.items()}
    for user, payment in paid.items():
        provider.settled.append(
            ProviderTransaction(payment.charge_id, user, payment.total_amount, "XTR", payment.invoice_payload)
        )
    return paid


@then(parsers.parse("each of them is told {coins:d} coins were added"))
def many_told_added(shop: Shop, coins: int) -> None:
    assert [[m["coins"] for m in shop.told("coins_credited", user)] for user in shop.buyers] == [[coins]] * len(
        shop.buyers
    )


@then(parsers.parse("Telegram's list of payments was read at most {count:d} times"))
def provider_read(shop: Shop, count: int) -> None:
    reads = shop.service.gateways.payment_provider().reads - shop.reads_before
    assert 1 <= reads <= count, reads


@then(parsers.parse("the user is told {coins:d} coins were added"))
def told_added(shop: Shop, coins: int) -> None:
    assert shop.told("coins_credited")[-1]["coins"] == coins


@then(parsers.parse("the user is told once that {coins:d} coins were added"))
def told_once(shop: Shop, coins: int) -> None:
    assert [m["coins"] for m in shop.told("coins_credited")] == [coins]


# --- refunds ---------------------------------------------------------------------------------


@given(parsers.parse('an operator has refunded charge "{charge}"'))
def has_refunded(shop: Shop, charge: str) -> None:
    shop.run(shop.cases.refund_payment()(uc.RefundPaymentCommand(charge, "control-1", "asked")))


@when(parsers.parse('an operator refunds charge "{charge}" because "{reason}"'))
def refunds(shop: Shop, charge: str, reason: str) -> None:
    shop.attempt(shop.cases.refund_payment()(uc.RefundPaymentCommand(charge, "control-1", reason)))


@then(parsers.parse('the refund of charge "{charge}" is {state}'))
def refund_state(shop: Shop, charge: str, state: str) -> None:
    assert shop.store.refunds[charge].state.value == state


@then(parsers.parse('Telegram has paid charge "{charge}" back'))
def paid_back(shop: Shop, charge: str) -> None:
    provider = shop.service.gateways.payment_provider()
    assert [tx.external_id for tx in provider.settled if tx.refund] == [charge]


@then(parsers.parse("{coins:d} coins of the user are recorded as refunded"))
def recorded_refunded(shop: Shop, coins: int) -> None:
    assert shop.balance().refunded == coins


@then("the user is told the purchase was refunded")
def told_refunded(shop: Shop) -> None:
    (told,) = shop.told("refunded")
    assert (told["coins"], told["stars"]) == (100, 50)


@given("Telegram cannot be reached")
def unreachable(shop: Shop) -> None:
    shop.service.gateways.payment_provider().unreachable = True


@when("Telegram can be reached again")
def reachable(shop: Shop) -> None:
    shop.service.gateways.payment_provider().unreachable = False


@given(parsers.parse('Telegram has lost its record of charge "{charge}"'))
def provider_forgot(shop: Shop, charge: str) -> None:
    provider = shop.service.gateways.payment_provider()
    provider.settled[:] = [tx for tx in provider.settled if tx.external_id != charge]
