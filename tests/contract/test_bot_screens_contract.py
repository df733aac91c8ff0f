"""Screens that stay true (issue 20, build 3), on the in-memory adapters, on PostgreSQL and
through PgBouncer: a button acts on the video it was under, and every press gets an answer."""

from __future__ import annotations

from typing import Any

import pytest

from videocopies.application import use_cases as uc
from videocopies.application.ports import BotUser, StoredVideo
from videocopies.domain.shared import UserId, WorkerId

from .chat import Chat
from .conftest import Backend

EVA = BotUser(UserId(21), "en", "Eva")


@pytest.fixture
def chat(backend: Backend) -> Chat:
    return Chat(backend)


def _video(name: str, size: int) -> StoredVideo:
    return StoredVideo("f", size, 10.0, 720, 1280, "video/mp4", f"sources/{EVA.user_id}/{name}", "0" * 64)


async def _ordered_source(chat: Chat, choice_data: str) -> str:
    """The source of the order a choice button leads to, once confirmed."""
    (quote,) = await chat.send(EVA, "button", data=choice_data)
    (confirmed,) = await chat.send(EVA, "button", data=quote.buttons[0][0].data)
    assert confirmed.text.startswith("Order accepted")
    cases: Any = chat.backend.cases
    (job,) = await cases.claim_job()(uc.ClaimJobCommand(WorkerId("w")))
    return str(job.source_key)


async def test_a_choice_under_an_older_video_orders_copies_of_that_video(chat: Chat) -> None:
    await chat.send(EVA, "text", text="/start")
    (older,) = await chat.send(EVA, "video", video=_video("101.mp4", 3_000_000))
    (newer,) = await chat.send(EVA, "video", video=_video("102.mp4", 4_000_000))
    five_of_older = older.buttons[0][1].data
    assert five_of_older.startswith("n:5:") and len(five_of_older.encode()) <= 64
    assert five_of_older != newer.buttons[0][1].data
    assert await _ordered_source(chat, five_of_older) == f"sources/{EVA.user_id}/101.mp4"


async def test_a_choice_from_before_buttons_named_their_video_means_the_latest(chat: Chat) -> None:
    await chat.send(EVA, "text", text="/start")
    await chat.send(EVA, "video", video=_video("201.mp4", 3_000_000))
    await chat.send(EVA, "video", video=_video("202.mp4", 4_000_000))
    assert await _ordered_source(chat, "n:1") == f"sources/{EVA.user_id}/202.mp4"


async def test_a_choice_for_a_video_no_longer_kept_says_so(chat: Chat) -> None:
    await chat.send(EVA, "video", video=_video("301.mp4", 3_000_000))
    (gone,) = await chat.send(EVA, "button", data="n:5:300.mp4")  # forgotten after its deletion
    assert gone.text == "The video you sent earlier is no longer kept. Please send it again."
    (other,) = await chat.send(EVA, "button", data="n:5:../../8/1.mp4")
    assert other.text == "The video you sent earlier is no longer kept. Please send it again."


async def test_cancel_on_a_closed_order_says_the_order_is_closed(chat: Chat) -> None:
    await chat.send(EVA, "text", text="/start")
    (choose,) = await chat.send(EVA, "video", video=_video("401.mp4", 3_000_000))
    (quote,) = await chat.send(EVA, "button", data=choose.buttons[0][0].data)
    (confirmed,) = await chat.send(EVA, "button", data=quote.buttons[0][0].data)
    cancel = confirmed.buttons[0][0].data
    (cancelled,) = await chat.send(EVA, "button", data=cancel)  # still queued: cancelled at once
    assert cancelled.text.startswith("Cancelled.")
    (again,) = await chat.send(EVA, "button", data=cancel)
    assert again.text == "This order was already cancelled."
    await chat.users.choose_language(EVA.user_id, "ru")
    (again,) = await chat.send(EVA, "button", data=cancel)
    assert again.text == "Этот заказ уже отменён."
