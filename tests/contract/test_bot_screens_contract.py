"""Screens that stay true (issue 20, build 3), on the in-memory adapters, on PostgreSQL and
through PgBouncer: a button acts on the video it was under, and every press gets an answer."""

from __future__ import annotations

from typing import Any

import attrs
import psycopg
import pytest

from videocopies.application import use_cases as uc
from videocopies.application.ports import BotUser, StoredVideo
from videocopies.domain.jobs import CopyArtifact
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


async def test_not_enough_coins_offers_the_packages_on_sale(chat: Chat) -> None:
    await chat.send(EVA, "text", text="/start")  # 50 coins
    (choose,) = await chat.send(EVA, "video", video=_video("501.mp4", 3_000_000))
    for said in ("Order accepted", "Not enough coins"):  # 10 copies cost 30
        (quote,) = await chat.send(EVA, "button", data=choose.buttons[0][2].data)
        (answer,) = await chat.send(EVA, "button", data=quote.buttons[0][0].data)
        assert answer.text.startswith(said)
    (packages,) = await chat.send(EVA, "text", text="/buy")
    assert [b.data for row in answer.buttons for b in row] == [b.data for row in packages.buttons for b in row]
    assert answer.buttons and all(b.data.startswith("b:") for row in answer.buttons for b in row)


async def test_a_picture_or_a_sound_is_told_what_to_send_instead(chat: Chat) -> None:
    refused = {"refusal": "not_a_video", "source_key": None}
    picture = attrs.evolve(_video("x", 100_000), mime_type="image/jpeg", **refused)
    (told,) = await chat.send(EVA, "video", video=picture)
    assert told.text.startswith("That is a picture, not a video.")
    sound = attrs.evolve(_video("x", 100_000), mime_type="audio/ogg", **refused)
    (told,) = await chat.send(EVA, "video", video=sound)
    assert told.text.startswith("That is a sound recording, not a video.")
    archive = attrs.evolve(_video("x", 100_000), mime_type="application/zip", **refused)
    (told,) = await chat.send(EVA, "video", video=archive)
    assert told.text.startswith("This file is not a video I can work with.")


async def test_history_sends_a_copy_again_while_the_store_keeps_it(chat: Chat) -> None:
    await chat.send(EVA, "text", text="/start")
    (choose,) = await chat.send(EVA, "video", video=_video("601.mp4", 3_000_000))
    (quote,) = await chat.send(EVA, "button", data=choose.buttons[0][0].data)  # 1 copy
    await chat.send(EVA, "button", data=quote.buttons[0][0].data)
    cases: Any = chat.backend.cases
    (job,) = await cases.claim_job()(uc.ClaimJobCommand(WorkerId("w")))
    artifact = CopyArtifact(f"copies/{job.order_id}/0.mp4", 10, "a" * 64, 10.0, 720, 1280)
    await cases.checkpoint_copy()(uc.CheckpointCopyCommand(job.job_id, job.token, 0, artifact))
    await cases.record_delivery()(uc.RecordDeliveryCommand(job.order_id, 0))
    await chat.received(EVA)
    (history,) = await chat.send(EVA, "text", text="/history")
    (again_data,) = [b.data for row in history.buttons for b in row]
    assert again_data == f"h:{job.order_id}:0" and "Press a copy to get it again" in history.text
    (again,) = await chat.send(EVA, "button", data=again_data)
    assert (again.text, again.video_key) == ("Copy 1 of 1, again", artifact.object_key)
    if chat.backend.name == "memory":
        return  # nothing deletes copies there
    url = chat.backend.service.gateways.config.database_url()  # type: ignore[attr-defined]
    async with await psycopg.AsyncConnection.connect(url, autocommit=True, prepare_threshold=None) as conn:
        await conn.execute("UPDATE stored_objects SET deleted_at = now() WHERE key = %s", [artifact.object_key])
    (gone,) = await chat.send(EVA, "button", data=again_data)
    assert gone.text.startswith("This copy is no longer kept") and gone.video_key is None


async def test_invite_names_the_bot_by_the_username_edge_gave(chat: Chat) -> None:
    (invite,) = await chat.send(EVA, "text", text="/invite", bot="videocopies_bot")
    assert "t.me/videocopies_bot?start=ref_21" in invite.text and "<bot>" not in invite.text
    (code_only,) = await chat.send(EVA, "text", text="/invite")  # an edge that did not say it
    assert "/start ref_21" in code_only.text and "t.me" not in code_only.text
