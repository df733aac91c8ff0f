"""The bot's conversation on the in-memory adapters: events go into the inbox, the
processor handles them per user in order, and the replies land in the outbox; the screens
render them in the user's language."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest

from videocopies.adapters.memory.bot import InMemoryBotUsers, InMemoryInbox
from videocopies.adapters.screens import Screen, render
from videocopies.application import use_cases as uc
from videocopies.application.bot.conversation import BotSettings, Conversation, confirm_data, confirm_mac
from videocopies.application.bot.inbox import InboxProcessor
from videocopies.application.ports import BotUser, InboxEvent, StoredVideo
from videocopies.domain.pricing import QuoteKeys
from videocopies.domain.shared import UserId, WorkerId

ANNA = BotUser(UserId(7), "ru", "Анна")
BOB = BotUser(UserId(8), "en", "Bob")


class Chat:
    def __init__(self, shop) -> None:  # type: ignore[no-untyped-def]
        self.shop = shop
        self.inbox = InMemoryInbox(shop.store)
        self.users = InMemoryBotUsers(shop.store)
        cases = shop.cases
        self.conversation = Conversation(
            shop.uow, self.users, shop.clock, shop.service.settings().pricing, shop.service.settings().quote_keys,
            cases.grant_coins(), cases.quote_order(), cases.confirm_order(), cases.cancel_order(),
            BotSettings(max_video_bytes=50 * 1024 * 1024, max_video_seconds=180),
        )
        self.processor = InboxProcessor(self.inbox, self.conversation, shop.clock)
        self._updates = itertools.count(1)
        self._seen = 0

    async def send(self, user: BotUser, kind: str, **fields: object) -> list[Screen]:
        event = InboxEvent(next(self._updates), user, kind, **fields)  # type: ignore[arg-type]
        await self.inbox.add([event], self.shop.clock.now())
        while await self.processor.turn():
            pass
        return self.received(user)

    def received(self, user: BotUser) -> list[Screen]:
        """What the user got since the last look."""
        rows = sorted(self.shop.store.outbox.items())[self._seen:]
        self._seen += len(rows)
        return [render(m.kind, m.payload, user.language) for _, m in rows if m.user_id == user.user_id]

    async def video(self, user: BotUser, size: int = 5_000_000, duration: float = 12.0, mime: str = "video/mp4"):  # type: ignore[no-untyped-def]
        video = StoredVideo("file-1", size, duration, 720, 1280, mime, f"sources/{user.user_id}/1.mp4", "0" * 64)
        return await self.send(user, "video", video=video)


@pytest.fixture
def chat(shop) -> Chat:  # type: ignore[no-untyped-def]
    return Chat(shop)


async def test_a_new_user_is_welcomed_with_the_start_bonus_once(chat: Chat) -> None:
    (welcome,) = await chat.send(BOB, "text", text="/start")
    assert "50 coins" in welcome.text and "welcome gift" in welcome.text
    (again,) = await chat.send(BOB, "text", text="/start")
    assert "50 coins" in again.text and "gift" not in again.text
    (balance,) = await chat.send(BOB, "text", text="/balance")
    assert balance.text.startswith("Available: 50 coins") and "expires" in balance.text


async def test_the_whole_order_in_russian(chat: Chat) -> None:
    await chat.send(ANNA, "text", text="/start")
    (choose,) = await chat.video(ANNA)
    assert choose.text == "Сколько копий сделать?"
    assert [b.data for b in choose.buttons[0]] == ["n:1:1.mp4", "n:5:1.mp4", "n:10:1.mp4"]
    (quote,) = await chat.send(ANNA, "button", data="n:5")
    assert "5 копий по 4 монеты: всего 20 монет" in quote.text
    confirm = quote.buttons[0][0]
    assert len(confirm.data.encode()) <= 64
    (confirmed,) = await chat.send(ANNA, "button", data=confirm.data)
    assert "в резерве 20 монет" in confirmed.text
    cancel = confirmed.buttons[0][0]

    # A worker makes the first copy: it is sent at once, with its place in the order.
    (job,) = await chat.shop.cases.claim_job()(uc.ClaimJobCommand(WorkerId("w")))
    await chat.shop.checkpoint(job, 0)
    (copy,) = chat.received(ANNA)
    assert copy.text == "Копия 1 из 5" and copy.video_key is not None

    (stopping,) = await chat.send(ANNA, "button", data=cancel.data)
    assert "Останавливаю" in stopping.text
    (balance,) = await chat.send(ANNA, "text", text="/balance")
    assert "В резерве под заказы: 20" in balance.text  # held until the worker stops


async def test_a_forged_or_replayed_confirm_button_orders_nothing(chat: Chat) -> None:
    await chat.send(BOB, "text", text="/start")
    await chat.video(BOB)
    (quote,) = await chat.send(BOB, "button", data="n:1")
    _, quote_id, copies, total, _mac = quote.buttons[0][0].data.split(":")
    (forged,) = await chat.send(BOB, "button", data=f"c:{quote_id}:{copies}:{total}:AAAAAAAAAAAAAAAA")
    assert forged.text == "This button is no longer valid."
    cheaper = confirm_data(QuoteKeys.of(b"other-secret" * 3), quote_id, 1, 1)  # a MAC made without core's secret
    (forged,) = await chat.send(BOB, "button", data=cheaper)
    assert forged.text == "This button is no longer valid."
    (confirmed,) = await chat.send(BOB, "button", data=quote.buttons[0][0].data)
    assert "Order accepted" in confirmed.text
    (replayed,) = await chat.send(BOB, "button", data=quote.buttons[0][0].data)
    assert replayed.text == "This order is already confirmed."
    (balance,) = await chat.send(BOB, "text", text="/balance")
    assert "Reserved for orders in progress: 5" in balance.text


async def test_another_users_quote_cannot_be_confirmed(chat: Chat) -> None:
    await chat.send(BOB, "text", text="/start")
    await chat.send(ANNA, "text", text="/start")
    await chat.video(BOB)
    (quote,) = await chat.send(BOB, "button", data="n:1")
    (refused,) = await chat.send(ANNA, "button", data=quote.buttons[0][0].data)
    assert refused.text == "Не нашёл такой заказ."


async def test_not_enough_coins_says_how_many(chat: Chat) -> None:
    await chat.send(BOB, "text", text="/start")  # 50 coins
    await chat.video(BOB)
    (quote,) = await chat.send(BOB, "button", data="n:10")  # 30 coins
    await chat.send(BOB, "button", data=quote.buttons[0][0].data)
    await chat.video(BOB)
    (second,) = await chat.send(BOB, "button", data="n:10")
    (short,) = await chat.send(BOB, "button", data=second.buttons[0][0].data)
    assert short.text == "Not enough coins: this needs 30, you have 20."


@pytest.mark.parametrize(
    ("size", "duration", "mime", "expected"),
    [
        (60 * 1024 * 1024, 10.0, "video/mp4", "This video is too large (60.0 MB). The limit is 50 MB."),
        (1_000_000, 600.0, "video/mp4", "This video is too long (600 s). The limit is 180 seconds."),
        (1_000_000, 10.0, "application/zip",
         "This file is not a video I can work with. Send an MP4, MOV or WebM video."),
    ],
)
async def test_an_unusable_video_gets_a_clear_message(  # type: ignore[no-untyped-def]
    chat: Chat, size, duration, mime, expected
) -> None:
    (refused,) = await chat.video(BOB, size=size, duration=duration, mime=mime)
    assert refused.text == expected
    (nothing,) = await chat.send(BOB, "button", data="n:1")
    assert nothing.text == "Send me a video first."


async def test_an_update_stored_twice_is_handled_once(chat: Chat) -> None:
    event = InboxEvent(500, BOB, "text", text="/help")
    assert await chat.inbox.add([event, event], chat.shop.clock.now()) == 1
    assert await chat.inbox.add([event], chat.shop.clock.now()) == 0
    while await chat.processor.turn():
        pass
    assert len(chat.received(BOB)) == 1


async def test_one_users_events_are_never_handled_at_once(chat: Chat) -> None:
    now = chat.shop.clock.now()
    await chat.inbox.add([InboxEvent(1, BOB, "text", text="/help"), InboxEvent(2, ANNA, "text", text="/help")], now)
    async with chat.inbox.turn() as one, chat.inbox.turn() as two, chat.inbox.turn() as three:
        (first,) = await one.claim(now, 1, 1)
        (second,) = await two.claim(now, 1, 1)
        assert {first.user.user_id, second.user.user_id} == {BOB.user_id, ANNA.user_id}
        assert await three.claim(now, 5, 5) == []  # both held
    async with chat.inbox.turn() as again:  # a turn that ended without commit lets its users go
        assert len(await again.claim(now, 5, 5)) == 2


def test_the_confirm_button_is_short_and_bound_to_the_quote_and_its_terms() -> None:
    keys, other = QuoteKeys.of(b"s" * 32, previous=b"p" * 32), QuoteKeys.of(b"t" * 32)
    data = confirm_data(keys, "abcdefghijkl", 10, 30)
    assert len(data.encode()) <= 64
    mac = data.rsplit(":", 1)[1]
    assert mac == confirm_mac(keys, "abcdefghijkl", "10:30")
    assert mac != confirm_mac(keys, "abcdefghijkm", "10:30") and mac != confirm_mac(other, "abcdefghijkl", "10:30")
    assert mac != confirm_mac(keys, "abcdefghijkl", "10:3")


async def test_new_orders_past_the_hourly_limit_get_a_clear_screen_and_reserve_nothing(shop) -> None:  # type: ignore[no-untyped-def]
    chat = Chat(shop)
    chat.conversation.settings = BotSettings(orders_per_hour=2)
    await chat.send(BOB, "text", text="/start")
    for _ in range(2):
        await chat.video(BOB)
        (quote,) = await chat.send(BOB, "button", data="n:1")
        (confirmed,) = await chat.send(BOB, "button", data=quote.buttons[0][0].data)
        assert "Order accepted" in confirmed.text
    await chat.video(BOB)
    (quote,) = await chat.send(BOB, "button", data="n:1")
    (refused,) = await chat.send(BOB, "button", data=quote.buttons[0][0].data)
    assert refused.text.startswith("That is 2 orders in the last hour") and "nothing was charged" in refused.text
    (balance,) = await chat.send(BOB, "text", text="/balance")
    assert "Reserved for orders in progress: 10" in balance.text  # the two accepted ones only

    shop.clock.advance(timedelta(hours=1, seconds=1))
    await chat.video(BOB)
    (quote,) = await chat.send(BOB, "button", data="n:1")
    (accepted,) = await chat.send(BOB, "button", data=quote.buttons[0][0].data)
    assert "Order accepted" in accepted.text
