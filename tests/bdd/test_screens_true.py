"""Screens that stay true, in English and in Russian (features/screens/staying_true.feature): a
button acts on the video it was under, Cancel on a closed order says so, not enough coins offers
the packages, a failure is told from a fixed list of reasons, a photo gets a helpful answer,
expiry is told as time left and an expired quote loses its Confirm button. The conversation runs
on the in-memory service and every outbox row is drawn as edge draws it."""

from __future__ import annotations

from typing import Any

import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from videocopies.adapters.memory.bot import InMemoryOutboxQueue
from videocopies.adapters.screens import render
from videocopies.application import use_cases as uc
from videocopies.application.lapsing import UNBUTTON
from videocopies.application.ports import StoredVideo
from videocopies.domain.payments import DEFAULT_PACKAGES
from videocopies.domain.shared import WorkerId

from . import test_screens as conversation
from .shop import USER, Shop
from .test_screens import Telegram, button, read, tell

scenarios("screens/staying_true.feature")

# The conversation's steps, as test_screens speaks them (a step is registered where it is declared).
telegram = conversation.telegram  # the user's side of the chat, a fixture
given(parsers.parse("the user's Telegram speaks {language}"))(conversation.speaks)
when(parsers.parse("the user sends a video and chooses {copies:d} from the offered numbers of copies"))(
    conversation.sends_and_chooses
)
when("the user presses the confirm button")(conversation.presses_confirm)
when("the copies are made and delivered")(conversation.made_and_delivered)
then(parsers.parse('the user is shown "{words}"'))(conversation.shown)

INTERNALS = ("Error", "Traceback", "/tmp", "ffmpeg", "Invalid data", ".py", ".mp4")


@pytest.fixture
def earlier() -> dict[str, Any]:
    """What the scenario keeps of earlier screens."""
    return {}


def _video(name: str, megabytes: int) -> StoredVideo:
    return StoredVideo(f"file-{name}", megabytes * 1_000_000, 12.0, 720, 1280, "video/mp4",
                       f"sources/{USER}/{name}.mp4", "0" * 64)

@when(parsers.parse("the user sends a video of {first:d} MB and then a video of {second:d} MB"))
def sends_two_videos(shop: Shop, telegram: Telegram, earlier: dict[str, Any], first: int, second: int) -> None:
    tell(shop, telegram, "video", video=_video("first", first))
    earlier["choice"] = telegram.screens  # the choice under the first video
    tell(shop, telegram, "video", video=_video("second", second))


@when(parsers.parse("the user chooses {copies:d} copies under the first video"))
def chooses_under_first(shop: Shop, telegram: Telegram, earlier: dict[str, Any], copies: int) -> None:
    telegram.screens = earlier["choice"]
    tell(shop, telegram, "button", data=button(telegram, f"n:{copies}:"))


@then(parsers.parse("the quote is for the video of {megabytes:d} MB"))
def quote_for(shop: Shop, megabytes: int) -> None:
    (quote,) = [o for o in shop.store.orders.values() if o.user_id == USER]
    assert quote.quote.source_key == f"sources/{USER}/first.mp4" and megabytes == 3


@when("the user presses Cancel under the accepted order")
def presses_cancel(shop: Shop, telegram: Telegram) -> None:
    tell(shop, telegram, "button", data=f"x:{shop.order_id}")


@when("the user presses the confirm button to no avail")
def confirms_in_vain(shop: Shop, telegram: Telegram) -> None:
    tell(shop, telegram, "button", data=button(telegram, "c:"))


@then("the user is offered the coin packages")
def offered_packages(shop: Shop, telegram: Telegram) -> None:
    offered = [b.data for s in telegram.screens for row in s.buttons for b in row]
    assert offered and offered == [f"b:{p.stars}" for p in DEFAULT_PACKAGES.packages]


@when(parsers.parse('the worker gives up on the order with "{raw}"'))
def worker_gives_up(shop: Shop, telegram: Telegram, raw: str) -> None:

    async def fail() -> None:
        (claimed,) = await shop.cases.claim_job()(uc.ClaimJobCommand(WorkerId("A")))
        await shop.cases.fail_job()(uc.FailJobCommand(claimed.job_id, claimed.token, raw, False, "r-1", WorkerId("A")))

    shop.run(fail())
    read(shop, telegram)


@then("nothing the user was shown names the error, a file or FFmpeg")
def nothing_internal(telegram: Telegram) -> None:
    for text in (s.text for s in telegram.screens):
        assert not any(word in text for word in INTERNALS), text


@when("the user sends a photo")
def sends_photo(shop: Shop, telegram: Telegram) -> None:
    photo = StoredVideo("photo-1", 90_000, 0.0, 0, 0, "image/jpeg", None, refusal="not_a_video")
    tell(shop, telegram, "video", video=photo)


@when("the user asks for the balance")
def asks_balance(shop: Shop, telegram: Telegram) -> None:
    tell(shop, telegram, "text", text="/balance")
    # drawn at the service's time: the scenario's clock is not the wall clock
    (balance,) = [m for m in shop.store.outbox.values() if m.user_id == USER and m.payload.get("screen") == "balance"]
    language = shop.run(shop.service.gateways.bot_users().language(USER))
    telegram.screens = [render(balance.kind, balance.payload, language, now=shop.clock.now())]


@pytest.fixture
def outbox(shop: Shop) -> InMemoryOutboxQueue:
    """The outbox as the edges take it: what an edge knew dies with it, this does not."""
    return InMemoryOutboxQueue(shop.store)


@when("the bot's messages are sent and the edge that sent them stops")
def messages_sent(shop: Shop, outbox: InMemoryOutboxQueue, earlier: dict[str, Any]) -> None:
    async def send() -> None:
        claimed = await outbox.claim(shop.clock.now(), 100)
        await outbox.sent_many([(m.message_id, {"message_id": 1000 + m.message_id}) for m in claimed])
        for m in claimed:
            if m.payload.get("screen") == "quote":
                earlier["quote"] = 1000 + m.message_id  # its Telegram message

    shop.run(send())


@when("the user presses the confirm button under the quote")
def confirms_under_quote(shop: Shop, telegram: Telegram, earlier: dict[str, Any]) -> None:
    tell(shop, telegram, "button", data=button(telegram, "c:"), message_id=earlier["quote"])


@when("the quote's price expires")
def price_expires(shop: Shop, outbox: InMemoryOutboxQueue) -> None:
    shop.clock.advance(shop.settings.quote_ttl)
    shop.run(outbox.lapse_buttons(shop.clock.now()))


def _told_to_unbutton(shop: Shop, outbox: InMemoryOutboxQueue) -> list[int]:
    async def claim() -> list[int]:
        claimed = await outbox.claim(shop.clock.now(), 100)
        await outbox.sent_many([(m.message_id, {}) for m in claimed])
        return [m.payload[UNBUTTON] for m in claimed if m.kind == UNBUTTON]

    return list(shop.run(claim()))


@then("the next edge is told to take the quote's buttons off, once")
def told_once(shop: Shop, outbox: InMemoryOutboxQueue, earlier: dict[str, Any]) -> None:
    assert _told_to_unbutton(shop, outbox) == [earlier["quote"]]
    shop.run(outbox.lapse_buttons(shop.clock.now()))
    assert _told_to_unbutton(shop, outbox) == []


@then("no edge is told to take the quote's buttons off again")
def told_never(shop: Shop, outbox: InMemoryOutboxQueue) -> None:
    assert _told_to_unbutton(shop, outbox) == []
