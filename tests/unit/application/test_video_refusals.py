"""A video the bot cannot take gets a screen that says why, and no quote: edge's refusal
picks the screen, and core checks the limits itself, on what edge measured."""

from __future__ import annotations

import itertools
from typing import Any

import attrs
import pytest

from videocopies.adapters.memory.bot import InMemoryBotUsers, InMemoryInbox
from videocopies.adapters.screens import Screen, render
from videocopies.application.bot.conversation import BotSettings, Conversation
from videocopies.application.bot.inbox import InboxProcessor
from videocopies.application.ports import BotUser, InboxEvent, StoredVideo
from videocopies.domain.shared import UserId

BOB = BotUser(UserId(8), "en", "Bob")
ANNA = BotUser(UserId(7), "ru", "Анна")
MIB = 1024 * 1024
PROBED = StoredVideo("f", 5 * MIB, 12.0, 720, 1280, "video/mp4", "sources/8/1.mp4", "0" * 64,
                     file_unique_id="u", fps=30.0, probed=True)


class Bot:
    def __init__(self, shop: Any) -> None:
        self.shop, self.inbox, self.users = shop, InMemoryInbox(shop.store), InMemoryBotUsers(shop.store)
        cases = shop.cases
        conversation = Conversation(
            shop.uow, self.users, shop.clock, shop.service.settings().pricing, shop.service.settings().quote_keys,
            cases.grant_coins(), cases.quote_order(), cases.confirm_order(), cases.cancel_order(),
            BotSettings(max_video_bytes=20 * MIB, max_video_seconds=180, max_pixel_rate=1920 * 1080 * 60),
        )
        self.processor = InboxProcessor(self.inbox, conversation, shop.clock)
        self._updates, self._seen = itertools.count(1), 0

    async def send(self, user: BotUser, kind: str, **fields: Any) -> list[Screen]:
        await self.inbox.add([InboxEvent(next(self._updates), user, kind, **fields)], self.shop.clock.now())
        while await self.processor.turn():
            pass
        rows = sorted(self.shop.store.outbox.items())[self._seen:]
        self._seen += len(rows)
        return [render(m.kind, m.payload, user.language) for _, m in rows if m.user_id == user.user_id]


@pytest.fixture
def bot(shop: Any) -> Bot:
    return Bot(shop)


@pytest.mark.parametrize(("changes", "said"), [
    ({"refusal": "too_big", "size": 25 * MIB, "source_key": None},
     "This video is too large (25.0 MB). The limit is 20 MB."),
    ({"refusal": "unavailable", "source_key": None}, "Telegram could not give me this file. Please send it again."),
    ({"refusal": "not_a_video", "source_key": None},
     "This file is not a video I can work with. Send an MP4, MOV or WebM video."),
    ({"refusal": "unreadable", "source_key": None},
     "This file is not a video I can work with. Send an MP4, MOV or WebM video."),
    ({"refusal": "too_long", "duration_s": 1800.0, "source_key": None},
     "This video is too long (1800 s). The limit is 180 seconds."),
    ({"refusal": "too_large_frame", "source_key": None},
     "This video has more picture a second than I can work with (frame size × frame rate). The limit is 124 "
     "megapixels a second, e.g. 1920×1080 at 60 fps."),
    # Core's own checks, on what edge measured.
    ({"size": 21 * MIB}, "This video is too large (21.0 MB). The limit is 20 MB."),
    ({"duration_s": 1800.0}, "This video is too long (1800 s). The limit is 180 seconds."),
    ({"width": 3840, "height": 2160, "fps": 60.0},
     "This video has more picture a second than I can work with (frame size × frame rate). The limit is 124 "
     "megapixels a second, e.g. 1920×1080 at 60 fps."),
    # A document nobody measured: no length, so no quote.
    ({"duration_s": 0.0, "width": 0, "height": 0, "fps": 0.0, "probed": False, "mime_type": "video/mp4"},
     "I could not check how long this video is, so I did not take it. Send it again as a video (up to 180 "
     "seconds)."),
])
async def test_a_video_the_bot_cannot_take_is_refused_with_the_reason(
    bot: Bot, changes: dict[str, Any], said: str
) -> None:
    await bot.send(BOB, "text", text="/start")
    (refused,) = await bot.send(BOB, "video", video=attrs.evolve(PROBED, **changes))
    assert refused.text == said
    (nothing,) = await bot.send(BOB, "button", data="n:1")
    assert nothing.text == "Send me a video first."
    assert bot.shop.store.orders == {}  # no quote, nothing reserved


async def test_a_measured_video_within_the_limits_is_offered_copies(bot: Bot) -> None:
    (choose,) = await bot.send(BOB, "video", video=PROBED)
    assert choose.text == "How many copies of this video?"
    # A long video measured at 59 s, sent as a document (Telegram gave no metadata): taken.
    (choose,) = await bot.send(BOB, "video", video=attrs.evolve(PROBED, duration_s=59.0, mime_type=None))
    assert choose.text == "How many copies of this video?"


async def test_refusals_speak_russian_too(bot: Bot) -> None:
    (refused,) = await bot.send(ANNA, "video", video=attrs.evolve(PROBED, refusal="unavailable", source_key=None))
    assert refused.text == "Telegram не смог отдать мне этот файл. Пришлите его ещё раз."
    (unreadable,) = await bot.send(ANNA, "unreadable", reason="data: String should match pattern")
    assert unreadable.text == "Не смог это прочитать. Пришлите видео ещё раз или /help."


def test_a_video_stored_before_the_new_fields_still_reads() -> None:
    old = {"file_id": "f", "size": 1, "duration_s": 2.0, "width": 2, "height": 2, "mime_type": None,
           "source_key": "sources/1/1.mp4", "sha256": None}
    video = StoredVideo(**old)
    assert (video.file_unique_id, video.refusal, video.fps, video.probed, video.pixel_rate) == (None, None, 0.0,
                                                                                               False, 0.0)
    event = InboxEvent.from_payload(1, "video", {"user": {"id": 1, "language": "en"}, "video": old})
    assert event.video == video


def test_a_copy_given_up_for_its_size_says_so_in_both_languages() -> None:
    from videocopies.adapters.screens import render

    payload = {"index": 1, "copies": 5, "reason": "too_large", "returned": 4}
    assert render("copy_failed", payload, "en").text.startswith("Copy 2 of 5 came out too large")
    assert render("copy_failed", payload, "ru").text.startswith("Копия 2 из 5 получилась слишком большой")
