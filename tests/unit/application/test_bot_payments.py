"""Buying coins and inviting friends through the bot's conversation, on the in-memory service:
/buy shows the packages, a package press writes an invoice to the outbox, a successful
payment the provider lists credits once with its own screen (one it does not list credits
nothing), and /start ref_<id> rewards both sides once, at the invited user's first order."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest

from videocopies.adapters.screens import Screen, render
from videocopies.application.ports import BotUser, InboxEvent, OutboxMessage, PaidInvoice, StoredVideo
from videocopies.domain.coins import LotKind
from videocopies.domain.payments import ProviderTransaction
from videocopies.domain.shared import UserId
from videocopies.settings import Settings, grant_rules_from_env, packages_from_env

ANNA = BotUser(UserId(7), "ru", "Анна")
BOB = BotUser(UserId(8), "en", "Bob")


class Bot:
    def __init__(self, shop) -> None:  # type: ignore[no-untyped-def]
        self.shop = shop
        self.inbox = shop.service.gateways.inbox()
        self.processor = shop.service.bot.inbox_processor()
        self._updates = itertools.count(1)
        self._seen = 0

    async def send(self, user: BotUser, kind: str, **fields: object) -> list[OutboxMessage]:
        await self.inbox.add([InboxEvent(next(self._updates), user, kind, **fields)], self.shop.clock.now())  # type: ignore[arg-type]
        while await self.processor.turn():
            pass
        rows = sorted(self.shop.store.outbox.items())[self._seen:]
        self._seen += len(rows)
        return [m for _, m in rows if m.user_id == user.user_id]

    async def screens(self, user: BotUser, kind: str, **fields: object) -> list[Screen]:
        return [render(m.kind, m.payload, user.language) for m in await self.send(user, kind, **fields)]

    async def order(self, user: BotUser) -> list[Screen]:
        """Send a video, ask for one copy, confirm: the screens of the confirmation."""
        key = f"sources/{user.user_id}/1.mp4"
        video = StoredVideo("file-1", 5_000_000, 12.0, 720, 1280, "video/mp4", key, "0" * 64)
        await self.send(user, "video", video=video)
        (quote,) = await self.screens(user, "button", data="n:1")
        return await self.screens(user, "button", data=quote.buttons[0][0].data)

    def settle_at_provider(self, user: BotUser, charge: str, stars: int, offer: str) -> None:
        self.shop.service.gateways.payment_provider().settled.append(
            ProviderTransaction(charge, user.user_id, stars, "XTR", offer)
        )


@pytest.fixture
def bot(shop) -> Bot:  # type: ignore[no-untyped-def]
    return Bot(shop)


async def test_buying_a_package_sends_an_invoice_and_a_payment_credits_it_once(bot: Bot) -> None:
    await bot.send(BOB, "text", text="/start")
    (balance,) = await bot.screens(BOB, "text", text="/balance")
    assert balance.buttons[0][0].data == "buy"
    (packages,) = await bot.screens(BOB, "button", data="buy")
    assert [b.data for row in packages.buttons for b in row] == ["b:50", "b:100", "b:250"]
    assert packages.buttons[1][0].text == "220 coins — 100 ⭐"
    (invoice,) = await bot.send(BOB, "button", data="b:100")
    assert (invoice.kind, invoice.payload) == ("invoice", {"stars": 100, "coins": 220, "offer": "buy:100:220"})
    shown = render(invoice.kind, invoice.payload, "ru").invoice
    assert shown is not None and (shown.title, shown.stars, shown.payload) == ("220 монет", 100, "buy:100:220")

    paid = PaidInvoice("charge-1", 100, "XTR", "buy:100:220")
    bot.settle_at_provider(BOB, "charge-1", 100, "buy:100:220")
    (credited,) = await bot.screens(BOB, "payment", payment=paid)
    assert credited.text == "Payment received: 220 coins added. You have 270 coins available."
    assert await bot.send(BOB, "payment", payment=paid) == []  # Telegram said it twice
    assert [lot.amount for lot in bot.shop.store.accounts[BOB.user_id].lots if lot.kind is LotKind.PURCHASE] == [220]


async def test_a_payment_that_matches_no_package_is_not_credited_and_the_user_is_told(bot: Bot) -> None:
    (told,) = await bot.screens(BOB, "payment", payment=PaidInvoice("charge-2", 77, "XTR", "junk"))
    assert "could not match it to a coin package" in told.text
    assert bot.shop.store.payments == {}


async def test_an_unknown_package_button_is_refused(bot: Bot) -> None:
    (told,) = await bot.screens(BOB, "button", data="b:77")
    assert told.text == "This button is no longer valid."


async def test_a_payment_the_provider_does_not_list_credits_nothing(bot: Bot) -> None:
    paid = PaidInvoice("invented-1", 100, "XTR", "buy:100:220")
    assert await bot.send(BOB, "payment", payment=paid) == []
    assert bot.shop.store.payments == {}
    (claim,) = bot.shop.store.payment_ledgers.claims.values()
    assert (claim.external_id, claim.user_id) == ("invented-1", BOB.user_id)


async def test_an_invite_link_rewards_both_sides_once_at_the_new_users_first_order(bot: Bot) -> None:
    await bot.send(ANNA, "text", text="/start")
    (welcome,) = await bot.screens(BOB, "text", text=f"/start ref_{ANNA.user_id}")
    assert "You came with a friend's invite: your first order brings you 30 more coins." in welcome.text
    assert "50 coins" in welcome.text  # nothing given yet
    (again,) = await bot.screens(BOB, "text", text=f"/start ref_{ANNA.user_id}")  # not a first contact
    assert "invite" not in again.text
    (own,) = await bot.screens(ANNA, "text", text=f"/start ref_{ANNA.user_id}")
    assert "приглашению" not in own.text
    assert bot.shop.store.accounts[ANNA.user_id].balance(bot.shop.clock.now()).available == 50

    bonus, confirmed = await bot.order(BOB)
    assert "reserved" in confirmed.text and bonus.text == "Your first order with a friend's invite: 30 coins are yours."
    rewarded = [render(m.kind, m.payload, "ru") for m in bot.shop.store.outbox.values() if m.user_id == ANNA.user_id]
    assert rewarded[-1].text == "Приглашённый вами друг сделал первый заказ: вам 30 монет."
    assert bot.shop.store.accounts[ANNA.user_id].balance(bot.shop.clock.now()).available == 80
    assert len(await bot.order(BOB)) == 1  # a second order settles nothing
    assert bot.shop.store.accounts[ANNA.user_id].balance(bot.shop.clock.now()).available == 80


async def test_a_new_user_with_a_bad_invite_link_just_starts(bot: Bot) -> None:
    (welcome,) = await bot.screens(BOB, "text", text="/start ref_999")  # nobody of that id
    assert "Hi, Bob!" in welcome.text and "invite" not in welcome.text
    assert bot.shop.store.referrals == {}


async def test_the_invite_screen_gives_the_users_own_code(bot: Bot) -> None:
    (invite,) = await bot.screens(BOB, "text", text="/invite")
    assert "ref_8" in invite.text and "first order" in invite.text and "30 coins" in invite.text


def test_settings_read_bonuses_validity_and_packages_from_the_environment() -> None:
    env = {"VIDEOCOPIES_START_BONUS": "20", "VIDEOCOPIES_REFERRAL_BONUS": "5", "VIDEOCOPIES_MANUAL_VALID_DAYS": "7",
           "VIDEOCOPIES_PURCHASE_VALID_DAYS": "365", "VIDEOCOPIES_START_VALID_DAYS": "never"}
    rules = grant_rules_from_env(env)
    assert (rules.start_bonus, rules.referral_bonus) == (20, 5)
    assert rules.valid_for(LotKind.MANUAL) == timedelta(days=7)
    assert rules.valid_for(LotKind.START) is None
    settings = Settings.from_env({"VIDEOCOPIES_QUOTE_SECRET": "s" * 32, **env})
    assert settings.purchase_valid_for == timedelta(days=365)
    catalog = packages_from_env({"VIDEOCOPIES_COIN_PACKAGES": "100:220,10:15"})
    assert [(p.stars, p.coins) for p in catalog.packages] == [(10, 15), (100, 220)]
    for bad in ("100", "a:b", "10:0", "10:5,10:6"):
        with pytest.raises(SystemExit):
            packages_from_env({"VIDEOCOPIES_COIN_PACKAGES": bad})
    with pytest.raises(SystemExit):
        grant_rules_from_env({"VIDEOCOPIES_MANUAL_VALID_DAYS": "soon"})
