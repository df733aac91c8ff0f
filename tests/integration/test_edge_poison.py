"""Edge against the strict simulator, with poison early in a stream of 100 users: a video whose
file Telegram cannot give, button data with a NUL or over 64 bytes, a text that is not text,
ids out of range, kinds the bot never asked for. Every later user is served, edge's process
never exits, and what could not be read is counted (and its user, when known, answered)."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import httpx

from videocopies.embedded.postgres import LocalPostgres
from videocopies.runtime.launch import CoreProcess, edge_process, issue_token, stop_process
from videocopies.testing.telegram_simulator import BotApiSimulator, SimulatedUser

from .harness import stopped_if_left

SECRET = "poison-secret" * 3


def _metrics(core_url: str) -> str:
    return httpx.get(f"{core_url}/metrics", timeout=10).text


def _unreadable_counted(core_url: str) -> float:
    text = _metrics(core_url)
    return sum(float(v) for v in re.findall(r"^videocopies_inbox_unreadable_total\{[^}]*\} ([0-9.e+]+)$", text, re.M))


async def _welcomed(users: list[SimulatedUser], timeout: float) -> list[int]:
    async def one(user: SimulatedUser) -> int | None:
        try:
            await user.next_message(contains="50 coins", timeout=timeout)
        except TimeoutError:
            return user.id
        return None

    return [u for u in await asyncio.gather(*(one(u) for u in users)) if u is not None]


def test_poison_early_in_a_stream_of_100_users_stops_nobody(
    pg_server: LocalPostgres, database: str, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    with BotApiSimulator() as sim:  # the strict profile
        bot_token = sim.create_bot()
        core = CoreProcess(url, quote_secret=SECRET)
        # Edge starts beside core: its imports take seconds, and it retries core until core answers.
        edge = edge_process(core.url, issue_token(url, "edge-poison", "edge"), bot_token, sim.url, tmp_path / "edge")
        with stopped_if_left(edge), core:
            try:
                deadline = time.monotonic() + 60
                while sim.state.bots[bot_token].poll_generation < 1:
                    assert edge.poll() is None and time.monotonic() < deadline, "edge did not start polling"
                    time.sleep(0.05)
                users = [sim.create_user(bot_token, first_name=f"U{n}", language_code="en") for n in range(100)]
                gone, nul, long_data, not_text, no_data = users[:5]
                for user in users[:5]:  # a button is pressed in a chat the user started
                    user.send_text("/start")
                gone.send_video_ref("BAACnot-a-file-telegram-has", "AgADgone1")
                nul.press_raw("n:5\x00")
                long_data.press_raw("x" * 100)
                not_text.send_raw("message", {"message_id": 1, "from": not_text.profile.to_json(),
                                              "chat": not_text.profile.chat_json(), "date": 0, "text": 12345})
                no_data.press_raw(None, message_id=1)
                unasked = users[5].send_raw("edited_message", {"message_id": 1, "text": "edited"})
                assert unasked is None  # Telegram never delivers a kind the bot did not ask for
                users[5].send_raw("message", {"message_id": 2,
                                              "from": {"id": 2**62, "is_bot": False, "first_name": "X"},
                                              "chat": {"id": 2**62, "type": "private"}, "date": 0, "text": "/start"})
                users[5].send_raw("message", "not an object")
                users[5].send_raw("pre_checkout_query", {"id": "q", "from": {"id": "nobody"}})
                users[5].send_raw("callback_query", {"id": "c1", "from": {"id": -5}, "data": "n:1"})
                for user in users[5:]:
                    user.send_text("/start")
                late = asyncio.run(_welcomed(users, timeout=60))
                assert late == [], f"{len(late)} users were not welcomed"
                told = asyncio.run(nul.next_message(contains="could not read", timeout=30))
                assert told.text
                asyncio.run(long_data.next_message(contains="could not read", timeout=30))
                asyncio.run(not_text.next_message(contains="could not read", timeout=30))
                asyncio.run(gone.next_message(contains="could not give me this file", timeout=30))
                assert edge.poll() is None, "edge exited"
                assert _unreadable_counted(core.url) >= 5
                deadline = time.monotonic() + 15  # edge's own counters reach core with its duty renewals
                counted = r'^videocopies_edge_unreadable\{node="edge-poison"\} [1-9]'
                while not re.search(counted, _metrics(core.url), re.M):
                    assert time.monotonic() < deadline, "edge's count of unreadable updates never reached core"
                    time.sleep(0.5)
                stats = sim.state.stats()
                assert stats["flood_violations"] == 0, stats
            finally:
                code, err = stop_process(edge)
            assert code == 0, err.decode()[-3000:]
