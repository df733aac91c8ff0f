"""Screens that stay true, in English and in Russian (features/screens/staying_true.feature): a
button acts on the video it was under, Cancel on a closed order says so, not enough coins offers
the packages, a failure is told from a fixed list of reasons, a photo gets a helpful answer and
expiry is told as time left. The conversation runs on the in-memory service and every outbox row
is drawn as edge draws it."""

from __future__ import annotations

from typing import Any

import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from videocopies.adapters.screens import render
from videocopies.application import use_cases as uc
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
