"""Free compute, the first attack of docs/security.md: a long video sent as a document (no
duration from Telegram), and a user who confirms and then blocks the bot so that every copy
is rendered for nothing. End to end on the strict simulator (cloud mode): core, edge and a
worker are processes of their own. Each test failed on the code before issue 16.

- A thirty-minute video sent as a document carries no duration; edge measures the file and
  it is refused before any coin is reserved.
- A 25 MB video in cloud mode cannot be fetched (getFile stops at 20 MB): refused, naming 20 MB.
- A user who blocks the bot while copies arrive: the next copy is refused (403), core cancels
  the order, the worker stops rendering, and only what arrived is charged.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import psycopg
import pytest

from integration.harness import stopped_if_left
from videocopies.adapters.ffmpeg.binary import ffmpeg_binary
from videocopies.adapters.ffmpeg.clips import make_clip
from videocopies.embedded.postgres import LocalPostgres
from videocopies.runtime.launch import CoreProcess, edge_process, issue_token, stop_process, worker_process
from videocopies.testing.telegram_simulator import BotApiSimulator, SimulatedUser

SECRET = "limits-secret" * 3


@attrs.frozen
class Bot:
    sim: BotApiSimulator
    token: str
    url: str


@pytest.fixture
def bot(pg_server: LocalPostgres, database: str, tmp_path: Path) -> Iterator[Bot]:
    """Cloud mode, the strict profile; edge and one worker share a local object store."""
    url = pg_server.url(database)
    store = tmp_path / "objects"
    processes: list[subprocess.Popen[bytes]] = []
    with BotApiSimulator() as sim:
        token = sim.create_bot()
        core = CoreProcess(url, quote_secret=SECRET)
        # Edge and the worker start beside core: their imports take seconds, and they retry core
        # until core answers.
        processes.append(edge_process(core.url, issue_token(url, "edge-1", "edge"), token, sim.url,
                                      tmp_path / "edge", store))
        processes.append(worker_process(core.url, issue_token(url, "worker-1"), tmp_path / "work", store))
        with stopped_if_left(processes[0]), stopped_if_left(processes[1]), core:
            try:
                yield Bot(sim, token, url)
            finally:
                for process in processes:
                    code, err = stop_process(process)
                    assert code == 0, err.decode()[-3000:]


def _account(url: str, user_id: int) -> tuple[int, int, int]:
    """(available, reserved, debited) of the user's coins."""
    with psycopg.connect(url) as conn:
        available, debited = conn.execute(
            "SELECT coalesce(sum(available), 0), coalesce(sum(debited), 0) FROM coin_lots WHERE user_id = %s",
            [user_id],
        ).fetchone()
        (reserved,) = conn.execute(
            "SELECT coalesce(sum(amount - debited - released), 0) FROM coin_reservations WHERE user_id = %s",
            [user_id],
        ).fetchone()
    return int(available), int(reserved), int(debited)


async def _started(user: SimulatedUser) -> None:
    user.send_text("/start")
    await user.next_message(contains="50 coins", timeout=60)


def test_a_thirty_minute_video_sent_as_a_document_is_refused_before_any_coin_is_reserved(
    bot: Bot, tmp_path: Path
) -> None:
    long = tmp_path / "long.mp4"  # thirty minutes of one tiny frame a second: a few kilobytes
    subprocess.run([ffmpeg_binary(), "-hide_banner", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    "color=c=gray:s=64x64:r=1:d=1800", "-c:v", "libx264", "-preset", "ultrafast", str(long)],
                   check=True, timeout=120)
    user = bot.sim.create_user(bot.token, language_code="en")

    async def story() -> str:
        await _started(user)
        user.send_document(long.read_bytes(), file_name="long.mp4", mime_type="video/mp4")
        return (await user.next_message(contains="too long", timeout=60)).text

    said = asyncio.run(story())
    assert "1800 s" in said and "180 seconds" in said
    assert _account(bot.url, user.id) == (50, 0, 0)
    with psycopg.connect(bot.url) as conn:
        assert conn.execute("SELECT count(*) FROM orders WHERE user_id = %s", [user.id]).fetchone() == (0,)


def test_a_25_mb_video_in_cloud_mode_is_refused_naming_20_mb(bot: Bot) -> None:
    user = bot.sim.create_user(bot.token, language_code="en")

    async def story() -> str:
        await _started(user)
        user.send_video(os.urandom(25 * 10**6), width=720, height=1280, duration=20)
        return (await user.next_message(contains="too large", timeout=60)).text

    said = asyncio.run(story())
    assert "The limit is 20 MB" in said
    assert _account(bot.url, user.id) == (50, 0, 0)


@pytest.mark.slow
def test_a_user_who_blocks_the_bot_stops_the_rendering_and_pays_for_what_arrived(bot: Bot, tmp_path: Path) -> None:
    # Long enough to render that ten copies take a while: the block must stop them midway.
    clip = make_clip(tmp_path / "clip.mp4", seconds=8, width=540, height=960)
    user = bot.sim.create_user(bot.token, language_code="en")

    async def story() -> None:
        await _started(user)
        user.send_video(clip.read_bytes(), width=540, height=960, duration=8)
        choose = await user.next_message(contains="How many copies", timeout=60)
        user.press(choose.message_id, next(d for d in choose.buttons if d.split(":")[1] == "10"))
        quote = await user.next_message(contains="10 copies", timeout=30)
        user.press(quote.message_id, quote.buttons[0])
        await user.next_message(contains="Order accepted", timeout=30)
        await user.next_message(media="video", timeout=180)
        user.block()

    asyncio.run(story())
    deadline = time.monotonic() + 120
    with psycopg.connect(bot.url, autocommit=True) as conn:
        while True:
            (state,) = conn.execute("SELECT state FROM orders WHERE user_id = %s", [user.id]).fetchone()
            if state in ("cancelled", "failed", "done"):
                break
            assert time.monotonic() < deadline, f"the order is still {state}"
            time.sleep(0.5)
        (rendered,) = conn.execute(
            "SELECT count(*) FROM job_checkpoints c JOIN jobs j USING (job_id) JOIN orders o USING (order_id)"
            " WHERE o.user_id = %s", [user.id],
        ).fetchone()
    assert state == "cancelled"
    assert rendered < 10, "every copy was rendered for a user who blocked the bot"
    delivered = sum(1 for entry in user.received if entry.message.get("video"))
    assert _account(bot.url, user.id) == (50 - 3 * delivered, 0, 3 * delivered)
    assert bot.sim.state.stats()["sends_after_blocked"] <= 1
