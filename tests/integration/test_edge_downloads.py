"""Edge's downloads, as processes on the strict simulator: a video sent again is not fetched
twice, and a video whose download an earlier edge left half-way is fetched by the next one
(its event waits in core as fetching; nothing Telegram sent is lost)."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import httpx

from videocopies.adapters.ffmpeg.clips import make_clip
from videocopies.embedded.postgres import LocalPostgres
from videocopies.runtime.launch import CoreProcess, edge_process, issue_token, stop_process
from videocopies.testing.telegram_simulator import BotApiSimulator

from .harness import stopped_if_left

SECRET = "downloads-secret" * 2


def _edge_count(core_url: str, name: str) -> int:
    text = httpx.get(f"{core_url}/metrics", timeout=10).text
    found = re.search(rf'^videocopies_edge_{name}\{{[^}}]*\}} ([0-9.e+]+)$', text, re.M)
    return int(float(found.group(1))) if found else 0


def test_a_video_sent_again_is_not_fetched_twice(pg_server: LocalPostgres, database: str, tmp_path: Path) -> None:
    url = pg_server.url(database)
    clip = make_clip(tmp_path / "clip.mp4", seconds=2).read_bytes()
    with BotApiSimulator() as sim:
        token = sim.create_bot()
        core = CoreProcess(url, quote_secret=SECRET)
        # Edge starts beside core: its imports take seconds, and it retries core until core answers.
        edge = edge_process(core.url, issue_token(url, "edge-1", "edge"), token, sim.url, tmp_path / "edge",
                            tmp_path / "objects")
        with stopped_if_left(edge), core:
            try:
                user = sim.create_user(token, language_code="en")

                async def story() -> None:
                    user.send_text("/start")
                    await user.next_message(contains="50 coins", timeout=60)
                    for _ in range(2):  # the same file twice: Telegram gives it the same file_unique_id
                        user.send_video(clip, width=360, height=640, duration=2)
                        await user.next_message(contains="How many copies", timeout=60)

                asyncio.run(story())
                deadline = time.monotonic() + 15
                while _edge_count(core.url, "downloads_already_stored") < 1:
                    assert time.monotonic() < deadline, "edge's counters never said the second video was known"
                    time.sleep(0.5)
                assert _edge_count(core.url, "downloads_downloads") == 1
            finally:
                code, err = stop_process(edge)
            assert code == 0, err.decode()[-3000:]


def test_a_download_left_half_way_is_taken_up_by_the_next_edge(
    pg_server: LocalPostgres, database: str, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    clip = make_clip(tmp_path / "clip.mp4", seconds=2).read_bytes()
    with BotApiSimulator() as sim, CoreProcess(url, quote_secret=SECRET) as core:
        token = sim.create_bot()
        edge_token = issue_token(url, "edge-1", "edge")
        user = sim.create_user(token, language_code="en")
        message = user.send_video(clip, width=360, height=640, duration=2)
        video = message["video"]
        bot = sim.state.bots[token]
        (update,) = bot.pending
        # What an edge that stopped right after storing the page leaves: the event in core,
        # fetching, and the update confirmed to Telegram.
        event = {"update_id": update.update_id, "kind": "video",
                 "user": {"id": user.id, "language_code": "en", "first_name": "U"},
                 "video": {"file_id": video["file_id"], "file_unique_id": video["file_unique_id"],
                           "size": video["file_size"], "duration_s": 2, "width": 360, "height": 640,
                           "mime_type": "video/mp4", "fetching": True}}
        stored = httpx.post(f"{core.url}/v1/inbox", json={"events": [event]},
                            headers={"Authorization": f"Bearer {edge_token}"}, timeout=10)
        assert stored.json()["stored"] == 1, stored.text
        sim.state.confirm_before(bot, update.update_id + 1)
        edge = edge_process(core.url, edge_token, token, sim.url, tmp_path / "edge", tmp_path / "objects")
        try:
            choose = asyncio.run(user.next_message(contains="How many copies", timeout=60))
            assert choose.buttons
        finally:
            code, err = stop_process(edge)
        assert code == 0, err.decode()[-3000:]
