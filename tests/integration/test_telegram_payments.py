"""The Telegram Stars payment provider with real aiogram against the Bot API simulator: the
transaction list read page by page, and refunds with Telegram's own refusals."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.types import LabeledPrice

from videocopies.adapters.http.client import CoreClient
from videocopies.adapters.telegram.edge import Downloads, Receiver, SignedUrlSources
from videocopies.adapters.telegram.payments import TelegramPaymentProvider, UnconfiguredPaymentProvider
from videocopies.application.errors import ProviderNotConfigured, RefundRefused
from videocopies.domain.payments import ProviderTransaction
from videocopies.domain.shared import UserId
from videocopies.embedded.postgres import free_port
from videocopies.testing.telegram_simulator import BotApiSimulator


@pytest.fixture
async def sim() -> AsyncIterator[BotApiSimulator]:
    async with BotApiSimulator() as simulator:
        yield simulator


@pytest.fixture
async def bot(sim: BotApiSimulator) -> AsyncIterator[Bot]:
    bot = Bot(sim.create_bot(), session=AiohttpSession(api=sim.api_server()))
    yield bot
    await bot.session.close()


async def _paid(bot: Bot, user, stars: int, offset: int) -> tuple[str, int]:  # type: ignore[no-untyped-def]
    """The user pays an invoice of `stars`; the bot accepts at pre-checkout. Its charge id."""
    sent = await bot.send_invoice(user.id, title="Coins", description="Coins for copies", payload=f"buy:{stars}:1",
                                  currency="XTR", prices=[LabeledPrice(label="Coins", amount=stars)])
    query_id = user.pay(sent.message_id, successful_payment="drop")
    updates = await bot.get_updates(offset=offset, timeout=2)
    (query,) = [u.pre_checkout_query for u in updates if u.pre_checkout_query is not None]
    assert query.id == query_id
    await bot.answer_pre_checkout_query(query.id, ok=True)
    outcome = await user.payment_outcome(query_id, timeout=5)
    return outcome["telegram_payment_charge_id"], updates[-1].update_id + 1


async def test_transactions_are_read_page_by_page_and_refunds_listed(sim: BotApiSimulator, bot: Bot) -> None:
    user = sim.create_user(bot_token=bot.token)
    user.send_text("/start")
    offset = (await bot.get_updates(timeout=1))[-1].update_id + 1
    charges = []
    for stars in (50, 100, 250):
        charge, offset = await _paid(bot, user, stars, offset)
        charges.append(charge)
    provider = TelegramPaymentProvider(bot, page=2)
    await provider.refund(UserId(user.id), charges[1])
    await provider.refund(UserId(user.id), charges[1])  # CHARGE_ALREADY_REFUNDED: done already

    listed = [tx async for tx in provider.transactions()]

    uid = UserId(user.id)
    assert listed == [
        ProviderTransaction(charges[0], uid, 50, "XTR", "buy:50:1"),
        ProviderTransaction(charges[1], uid, 100, "XTR", "buy:100:1"),
        ProviderTransaction(charges[2], uid, 250, "XTR", "buy:250:1"),
        ProviderTransaction(charges[1], uid, 100, "XTR", "buy:100:1", refund=True),
    ]
    with pytest.raises(RefundRefused) as unknown:
        await provider.refund(uid, "no-such-charge")
    assert "CHARGE_ID_INVALID" in unknown.value.reason
    with pytest.raises(RefundRefused, match="USER_ID_INVALID"):
        await provider.refund(UserId(user.id + 1), charges[0])


async def test_without_a_bot_token_there_is_no_provider_to_ask() -> None:
    with pytest.raises(ProviderNotConfigured):
        await UnconfiguredPaymentProvider().refund(UserId(1), "x")
    with pytest.raises(ProviderNotConfigured):
        [tx async for tx in UnconfiguredPaymentProvider().transactions()]


async def test_edge_declines_a_payment_when_core_cannot_say(
    sim: BotApiSimulator, bot: Bot, tmp_path: Path
) -> None:
    """Telegram waits 10 seconds for the answer: with core away, edge declines in time, and
    the user is not charged."""
    core = CoreClient(f"http://127.0.0.1:{free_port()}", "edge.secret", retry_for_s=0.5)
    async def nowhere(videos: list[dict]) -> None:
        raise AssertionError("no video in this test")

    downloads = Downloads(bot, SignedUrlSources(core), tmp_path, nowhere, download_limit=20 * 2**20)
    receiver = Receiver(bot, core, downloads)
    user = sim.create_user(bot_token=bot.token, language_code="en")
    user.send_text("/start")
    offset = (await bot.get_updates(timeout=1))[-1].update_id + 1
    sent = await bot.send_invoice(user.id, title="Coins", description="Coins for copies", payload="buy:50:100",
                                  currency="XTR", prices=[LabeledPrice(label="Coins", amount=50)])
    query_id = user.pay(sent.message_id)
    try:
        updates = await bot.get_updates(offset=offset, timeout=2)  # edge takes them as the Bot API's JSON
        await receiver.store([u.model_dump(mode="json", by_alias=True, exclude_none=True) for u in updates])
    finally:
        await core.close()
    outcome = await user.payment_outcome(query_id, timeout=5)
    assert outcome["outcome"] == "declined" and "nothing was charged" in outcome["error_message"]
    assert sim.state.bot(bot.token).charges == {}
