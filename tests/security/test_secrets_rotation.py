"""Rotating the quote secret, end to end (the Bot API simulator, edge and core as processes on
a real PostgreSQL): a confirm button signed before the rotation still orders while the old
secret is VIDEOCOPIES_QUOTE_SECRET_PREVIOUS, and orders nothing once that key is retired."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path

import psycopg

from integration.harness import stopped_if_left
from videocopies.adapters.ffmpeg.clips import make_clip
from videocopies.embedded.postgres import LocalPostgres
from videocopies.runtime.launch import CoreProcess, edge_process, issue_token, stop_process
from videocopies.testing.telegram_simulator import BotApiSimulator, SimulatedUser

FIRST, SECOND, THIRD = (secrets.token_urlsafe(32) for _ in range(3))


async def _confirm_button(user: SimulatedUser, clip: bytes) -> tuple[int, str]:
    """Send the video and press "1 copy" on its choice screen (a choice is spent once pressed):
    the quote's message and its confirm button."""
    user.send_video(clip, width=360, height=640, duration=2)
    choose = (await user.next_message(contains="How many copies", timeout=60)).message["message_id"]
    offered = next(e.buttons for e in user.received if e.message_id == choose and e.buttons)
    user.press(choose, next(d for d in offered if d.split(":")[1] == "1"))
    quote = await user.next_message(contains="The price holds", timeout=30)
    (data,) = [b["callback_data"] for row in quote.message["reply_markup"]["inline_keyboard"] for b in row
               if b["callback_data"].startswith("c:")]
    return int(quote.message["message_id"]), data


async def _answer_to(user: SimulatedUser, message_id: int, data: str) -> str:
    user.press(message_id, data)
    answer = await user.next_message(lambda e: "Order accepted" in e.text or "no longer valid" in e.text, timeout=30)
    return answer.text


def _key_id(data: str) -> str:
    return data.rsplit(":", 1)[1].split(".")[0]


def test_a_quote_signed_with_the_previous_secret_confirms_and_one_with_a_retired_secret_does_not(
    pg_server: LocalPostgres, database: str, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    clip = make_clip(tmp_path / "clip.mp4", seconds=2)
    with BotApiSimulator() as sim:
        token = sim.create_bot()
        core = CoreProcess(url, quote_secret=FIRST)
        # Edge starts beside core: its imports take seconds, and it retries core until core answers.
        edge = edge_process(core.url, issue_token(url, "edge-1", "edge"), token, sim.url, tmp_path / "edge",
                            tmp_path / "objects")
        with stopped_if_left(edge), core:
            try:
                user = sim.create_user(token, language_code="en")

                async def before_rotation() -> list[tuple[int, str]]:
                    user.send_text("/start")
                    await user.next_message(contains="50 coins", timeout=60)
                    return [await _confirm_button(user, clip.read_bytes()) for _ in range(2)]

                signed_first, also_signed_first = asyncio.run(before_rotation())

                core.restart(VIDEOCOPIES_QUOTE_SECRET=SECOND, VIDEOCOPIES_QUOTE_SECRET_PREVIOUS=FIRST)
                during = asyncio.run(_answer_to(user, *signed_first))
                signed_second = asyncio.run(_confirm_button(user, clip.read_bytes()))

                core.restart(VIDEOCOPIES_QUOTE_SECRET=THIRD, VIDEOCOPIES_QUOTE_SECRET_PREVIOUS=SECOND)
                retired = asyncio.run(_answer_to(user, *also_signed_first))
                previous = asyncio.run(_answer_to(user, *signed_second))
            finally:
                code, err = stop_process(edge)
                assert code == 0, err.decode()[-3000:]

    assert _key_id(signed_first[1]) != _key_id(signed_second[1])  # each button names its key
    assert "Order accepted" in during
    assert retired == "This button is no longer valid."
    assert "Order accepted" in previous
    with psycopg.connect(url) as conn:
        confirmed = conn.execute("SELECT count(*) FROM orders WHERE user_id = %s AND state <> 'quoted'",
                                 [user.id]).fetchone()
    assert confirmed == (2,)
