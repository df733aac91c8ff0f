"""Acceptance: the whole path through a real client. Every role is a process of its own:
core (PostgreSQL), edge (real aiogram, against the Bot API simulator in local mode),
a worker (FFmpeg). A user with 50 coins uploads a 25 MB video, orders 5 copies at 4 coins,
receives the first copy, cancels, downloads what arrived and decodes it fully; then the
ledger is compared: 4 coins per copy received, nothing reserved, the rest available, and
the lot keeps its expiry."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from pathlib import Path

import psycopg
import pytest

from integration.harness import stopped_if_left
from videocopies.adapters.ffmpeg.clips import make_clip
from videocopies.adapters.ffmpeg.decode import FfmpegDecodingProber
from videocopies.embedded.postgres import LocalPostgres
from videocopies.runtime.launch import CoreProcess, edge_process, issue_token, stop_process, worker_process
from videocopies.testing.telegram_simulator import BotApiSimulator

SECRET = "acceptance-secret" * 2


@pytest.mark.slow
def test_a_user_orders_receives_cancels_and_pays_only_for_what_arrived(
    pg_server: LocalPostgres, database: str, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    clip = make_clip(tmp_path / "upload.mp4", seconds=5, width=540, height=960, noise=30, qp=30)
    assert clip.stat().st_size > 25 * 10**6
    processes: list[subprocess.Popen[bytes]] = []
    with BotApiSimulator(mode="local", files_dir=tmp_path / "telegram") as sim:
        bot_token = sim.create_bot()
        core = CoreProcess(url, quote_secret=SECRET, VIDEOCOPIES_TELEGRAM_LOCAL="1")
        # Edge and the worker start beside core: their imports take seconds, and they retry core
        # until core answers.
        edge_token = issue_token(url, "edge-1", "edge")
        processes.append(edge_process(core.url, edge_token, bot_token, sim.url, tmp_path / "edge", tmp_path / "objects",
                                      local_api=True))
        worker_token = issue_token(url, "worker-1")
        processes.append(worker_process(core.url, worker_token, tmp_path / "work", tmp_path / "objects",
                                        VIDEOCOPIES_TELEGRAM_LOCAL="1"))
        with stopped_if_left(processes[0]), stopped_if_left(processes[1]), core:
            user = sim.create_user(bot_token, first_name="Ann", language_code="en")
            try:
                asyncio.run(_story(user, clip, tmp_path, url))
            finally:
                for process in processes:
                    process.send_signal(signal.SIGTERM)  # all at once; then each is waited for
                for process in processes:
                    code, err = stop_process(process)
                    assert code == 0, err.decode()[-3000:]


async def _story(user, clip: Path, tmp: Path, url: str) -> None:  # type: ignore[no-untyped-def]
    user.send_text("/start")
    welcome = await user.next_message(contains="50 coins", timeout=30)
    assert "welcome gift" in welcome.text
    with psycopg.connect(url) as conn:
        (expires_before,) = conn.execute("SELECT expires_at FROM coin_lots WHERE user_id = %s", [user.id]).fetchone()

    user.send_video(clip.read_bytes(), width=540, height=960, duration=5, file_name="clip.mp4", mime_type="video/mp4")
    choose = await user.next_message(contains="How many copies", timeout=60)
    user.press(choose.message_id, next(d for d in choose.buttons if d.split(":")[1] == "5"))
    quote = await user.next_message(contains="5 copies at 4 coins each: 20 coins", timeout=30)
    (confirm,) = quote.buttons
    user.press(quote.message_id, confirm)
    accepted = await user.next_message(contains="Order accepted", timeout=30)
    (cancel,) = accepted.buttons

    first = await user.next_message(media="video", timeout=180)
    assert first.text == "Copy 1 of 5"
    # Edge tells core a copy arrived once Telegram took it (reports go every 50 ms). A press that
    # beats the report finds the copy not yet delivered, and a cancel drops such a copy uncharged
    # (docs/domain.md): the user would keep it free. The story presses once core has heard.
    await _delivery_recorded(url, user.id)
    started = time.monotonic()
    user.press(accepted.message_id, cancel)
    closed = await user.next_message(contains="Cancelled", timeout=120)
    assert time.monotonic() - started < 120

    videos = [entry for entry in user.received if entry.message.get("video")]
    assert videos and videos[0].seq == first.seq
    prober = FfmpegDecodingProber()
    for n, entry in enumerate(videos):
        path = tmp / f"received-{n}.mp4"
        path.write_bytes(user.download_video(entry))
        probed = await prober.probe(path, full_decode=True)
        assert probed.frames > 0 and probed.has_audio and (probed.width, probed.height) == (540, 960)

    delivered = len(videos)
    assert f"Charged {4 * delivered} coins" in closed.text
    user.send_text("/balance")
    balance = await user.next_message(contains="Available:", timeout=30)
    assert balance.text.startswith(f"Available: {50 - 4 * delivered} coins")
    assert "Reserved for orders in progress: 0" in balance.text
    with psycopg.connect(url) as conn:
        amount, available, debited, expired, expires_after = conn.execute(
            "SELECT amount, available, debited, expired, expires_at FROM coin_lots WHERE user_id = %s", [user.id]
        ).fetchone()
        (state,) = conn.execute("SELECT state FROM orders WHERE user_id = %s AND state <> 'quoted'",
                                [user.id]).fetchone()
    assert (amount, available, debited, expired) == (50, 50 - 4 * delivered, 4 * delivered, 0)
    assert expires_after == expires_before and state == "cancelled"


async def _delivery_recorded(url: str, user_id: int, within_s: float = 10.0) -> None:
    deadline = time.monotonic() + within_s
    while True:
        with psycopg.connect(url) as conn:
            rows = conn.execute("SELECT copy_states FROM orders WHERE user_id = %s", [user_id]).fetchall()
        if any(state == "delivered" for (states,) in rows for state, _key in states):
            return
        assert time.monotonic() < deadline, "core never heard that the first copy arrived"
        await asyncio.sleep(0.05)
