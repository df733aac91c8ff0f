"""Pricing: a versioned tariff prices the copies, and a signed quote fixes that price until
it expires; an altered, foreign, stale or retired quote cannot order anything."""

from datetime import UTC, datetime, timedelta, timezone

import attrs
import pytest

from videocopies.domain.pricing import (
    InvalidTariff,
    PricingPolicy,
    Quote,
    QuoteExpired,
    QuoteForged,
    QuoteKeys,
    QuoteNotYours,
    Tariff,
    TariffRetired,
    UnsupportedCopyCount,
)
from videocopies.domain.shared import OrderId, UserId

T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)
TTL = timedelta(minutes=10)
KEYS = QuoteKeys.of(b"quote-secret" * 3)
USER = UserId(1001)
TARIFF = Tariff(version=2, per_copy={1: 5, 5: 4, 10: 3})
POLICY = PricingPolicy(TARIFF)


def issue(copies: int = 5, quote_id: str = "order-1", tariff: Tariff = TARIFF, keys: QuoteKeys = KEYS) -> Quote:
    return Quote.issue(OrderId(quote_id), USER, "sources/u/clip.mp4", copies, tariff, T0, TTL, keys)


# --- tariffs ------------------------------------------------------------------------------


@pytest.mark.parametrize(("copies", "per_copy", "total"), [(1, 5, 5), (5, 4, 20), (10, 3, 30)])
def test_a_tariff_prices_each_offered_number_of_copies(copies, per_copy, total):
    assert TARIFF.price_per_copy(copies) == per_copy
    assert TARIFF.total(copies) == total


def test_a_tariff_lists_what_it_offers_whatever_order_the_prices_came_in():
    shuffled = Tariff(version=2, per_copy={10: 3, 1: 5, 5: 4})
    as_pairs = Tariff(version=2, per_copy=((5, 4), (10, 3), (1, 5)))

    assert TARIFF.offered == (1, 5, 10)
    assert shuffled == TARIFF == as_pairs


@pytest.mark.parametrize("copies", [0, 2, 3, 11, -1])
def test_a_number_of_copies_the_tariff_does_not_offer_is_refused(copies):
    with pytest.raises(UnsupportedCopyCount) as refused:
        TARIFF.price_per_copy(copies)
    with pytest.raises(UnsupportedCopyCount):
        TARIFF.total(copies)

    assert (refused.value.copies, refused.value.offered) == (copies, (1, 5, 10))


@pytest.mark.parametrize(
    "prices",
    [{}, {0: 5}, {-1: 5}, {1: 0}, {1: -3}, {1: 2.5}, {1.0: 5}, {"1": 5}, {1: "5"}],
    ids=["empty", "zero-copies", "negative-copies", "free", "negative-price", "fractional-price",
         "float-copies", "text-copies", "text-price"],
)
def test_an_invalid_tariff_is_refused(prices):
    with pytest.raises(InvalidTariff):
        Tariff(version=1, per_copy=prices)


@pytest.mark.parametrize("prices", [{5: True}, {True: 5}], ids=["bool-price", "bool-copies"])
def test_a_bool_is_neither_a_price_nor_a_number_of_copies(prices):
    with pytest.raises(InvalidTariff):
        Tariff(version=1, per_copy=prices)


# --- issuing a quote ----------------------------------------------------------------------


def test_a_quote_fixes_the_price_tariff_version_and_expiry():
    quote = issue(copies=5)

    assert (quote.copies, quote.price_per_copy, quote.total) == (5, 4, 20)
    assert quote.tariff_version == 2
    assert quote.expires_at == T0 + TTL
    assert quote.user_id == USER


def test_a_quote_signature_is_stable_and_short_enough_for_a_button():
    quote = issue()

    assert issue().token == quote.token
    assert quote.signed(KEYS) == quote
    key_id, mac = quote.token.split(".")
    assert key_id == KEYS.current.key_id
    assert len(mac) == 22  # 128 bits, URL-safe base64 without padding
    assert set(key_id + mac) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def test_every_quote_gets_its_own_signature():
    assert issue(quote_id="order-1").token != issue(quote_id="order-2").token
    assert issue(copies=5).token != issue(copies=10).token


def test_a_quote_for_an_unoffered_number_of_copies_is_not_issued():
    with pytest.raises(UnsupportedCopyCount):
        issue(copies=3)


# --- verifying a quote --------------------------------------------------------------------


def test_a_genuine_unexpired_quote_passes():
    issue().verify(KEYS, T0 + TTL - timedelta(microseconds=1), POLICY, USER)


def forged_variants() -> dict[str, Quote]:
    quote = issue()
    cheaper = attrs.evolve(quote, price_per_copy=1, total=5)
    lying_total = attrs.evolve(quote, total=1)
    return {
        "changed-token": attrs.evolve(quote, token="A" * 22),
        "empty-token": attrs.evolve(quote, token=""),
        "cheaper-with-old-token": cheaper,
        "more-copies-with-old-token": attrs.evolve(quote, copies=10, total=40),
        "later-expiry-with-old-token": attrs.evolve(quote, expires_at=T0 + 10 * TTL),
        "other-source-with-old-token": attrs.evolve(quote, source_key="sources/u/other.mp4"),
        "signed-with-another-secret": issue(keys=QuoteKeys.of(b"someone-elses-secret" * 2)),
        # Even correctly signed, a total that is not copies x price is not a real quote.
        "inconsistent-total-resigned": attrs.evolve(lying_total, token=lying_total.signed(KEYS).token),
    }


@pytest.mark.parametrize("name", list(forged_variants()))
def test_an_altered_or_foreign_signed_quote_is_refused_as_forged(name):
    forged = forged_variants()[name]

    with pytest.raises(QuoteForged) as refused:
        forged.verify(KEYS, T0, POLICY, USER)

    assert refused.value.quote_id == "order-1"


def test_a_quotes_terms_are_every_field_but_its_token():
    quote = issue()
    for field in attrs.fields(Quote):
        if field.name == "token":
            assert attrs.evolve(quote, token="other").terms() == quote.terms()
            continue
        changed = attrs.evolve(quote, **{field.name: 7 if isinstance(getattr(quote, field.name), int) else "x"})
        assert changed.terms() != quote.terms(), field.name


def test_a_genuine_quote_verifies_whatever_timezone_its_expiry_is_read_back_in():
    quote = issue()
    read_back = attrs.evolve(quote, expires_at=quote.expires_at.astimezone(timezone(timedelta(hours=1))))
    assert read_back == quote  # the same instant

    read_back.verify(KEYS, T0, POLICY, USER)


def test_the_right_secret_matters():
    with pytest.raises(QuoteForged):
        issue().verify(QuoteKeys.of(b"another-secret" * 3), T0, POLICY, USER)


def test_another_users_quote_is_refused():
    with pytest.raises(QuoteNotYours) as refused:
        issue().verify(KEYS, T0, POLICY, UserId(2002))

    assert (refused.value.quote_id, refused.value.user_id) == ("order-1", 2002)


@pytest.mark.parametrize("late", [timedelta(0), timedelta(microseconds=1), timedelta(hours=1)])
def test_a_quote_is_refused_from_its_expiry_on(late):
    quote = issue()

    with pytest.raises(QuoteExpired) as refused:
        quote.verify(KEYS, quote.expires_at + late, POLICY, USER)

    assert refused.value.expired_at == T0 + TTL


def test_a_quote_on_a_retired_tariff_is_refused():
    quote = issue()
    policy = PricingPolicy(Tariff(version=3, per_copy={1: 6, 5: 5}))

    with pytest.raises(TariffRetired) as refused:
        quote.verify(KEYS, T0, policy, USER)

    assert (refused.value.quote_id, refused.value.tariff_version) == ("order-1", 2)


def test_an_old_tariff_version_still_accepted_is_honoured_at_its_old_price():
    quote = issue()
    policy = PricingPolicy(Tariff(version=3, per_copy={1: 6, 5: 5}), also_accepted={1, 2})

    quote.verify(KEYS, T0, policy, USER)

    assert policy.accepted_versions == frozenset({1, 2, 3})
    assert quote.total == 20


def test_the_current_tariff_is_always_accepted():
    assert POLICY.accepts(2)
    assert not POLICY.accepts(1)
