"""Screens in the user's language: the conversation runs on the in-memory service, and every
outbox row is drawn as edge draws it, in the language the bot keeps for the user."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from videocopies.adapters.screens import Screen, render
from videocopies.application import use_cases as uc
from videocopies.application.ports import BotUser, InboxEvent, StoredVideo
from videocopies.application.ports.bot import language_of
from videocopies.domain.shared import OrderId, WorkerId

from .shop import USER, Shop, artifact

scenarios("screens/languages.feature")

TELEGRAM_LANGUAGES = {"English": "en", "Russian": "ru", "German": "de"}


@attrs.define
class Telegram:
    """The user's side of the chat: who they are, and how many of the bot's messages they have read."""

    user: BotUser = BotUser(USER, "en")
    read: int = 0
    screens: list[Screen] = attrs.Factory(list)


@pytest.fixture
def telegram() -> Telegram:
    return Telegram()


def tell(shop: Shop, telegram: Telegram, kind: str, **fields: Any) -> None:
    """Edge stores the update in the inbox, core handles it; the user then reads what came."""
    event = InboxEvent(next(shop.updates), telegram.user, kind, **fields)

    async def deliver() -> None:
        await shop.service.gateways.inbox().add([event], shop.clock.now())
        processor = shop.service.bot.inbox_processor()
        while await processor.turn():
            pass

    shop.run(deliver())
    read(shop, telegram)


def read(shop: Shop, telegram: Telegram) -> None:
    language = shop.run(shop.service.gateways.bot_users().language(USER))
    rows = [m for _, m in sorted(shop.store.outbox.items()) if m.user_id == USER]
    telegram.screens = [render(m.kind, m.payload, language) for m in rows[telegram.read:]]
    telegram.read = len(rows)


def button(telegram: Telegram, data_prefix: str) -> str:
    (data,) = [b.data for s in telegram.screens for row in s.buttons for b in row if b.data.startswith(data_prefix)]
    return data


@given(parsers.parse("the user's Telegram speaks {language}"))
def speaks(telegram: Telegram, language: str) -> None:
    telegram.user = BotUser(USER, language_of(TELEGRAM_LANGUAGES[language]))


@when(parsers.parse("the user sends a video and chooses {copies:d} from the offered numbers of copies"))
def sends_and_chooses(shop: Shop, telegram: Telegram, copies: int) -> None:
    video = StoredVideo("file-1", 5_000_000, 12.0, 720, 1280, "video/mp4", f"sources/{USER}/1.mp4", "0" * 64)
    tell(shop, telegram, "video", video=video)
    tell(shop, telegram, "button", data=button(telegram, f"n:{copies}"))


@when("the user presses the confirm button")
def presses_confirm(shop: Shop, telegram: Telegram) -> None:
    tell(shop, telegram, "button", data=button(telegram, "c:"))
    (confirmed,) = shop.told("confirmed")[-1:]
    shop.order_id = OrderId(confirmed["order_id"])


@when("the copies are made and delivered")
def made_and_delivered(shop: Shop, telegram: Telegram) -> None:
    async def make() -> None:
        (claimed,) = await shop.cases.claim_job()(uc.ClaimJobCommand(WorkerId("A")))
        for index in range(len(shop.order().copies)):
            await shop.cases.checkpoint_copy()(uc.CheckpointCopyCommand(
                claimed.job_id, claimed.token, index, artifact(shop, index + 1, "A"), WorkerId("A")))
            await shop.cases.record_delivery()(uc.RecordDeliveryCommand(shop.order_id, index))
        await shop.cases.complete_job()(uc.CompleteJobCommand(claimed.job_id, claimed.token, "done-1", WorkerId("A")))

    shop.run(make())
    read(shop, telegram)


@then(parsers.parse('the user is shown "{words}"'))
def shown(telegram: Telegram, words: str) -> None:
    texts = [s.text for s in telegram.screens]
    assert any(words in text for text in texts), texts

