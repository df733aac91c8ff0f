"""The edge role as a process, with real aiogram against the Bot API simulator and a real
core: updates come in by webhook (the secret token checked) or by long polling, every one
is stored in core's inbox once, and the screens come back out through the outbox."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

import httpx
import psycopg

from videocopies.embedded.postgres import LocalPostgres, free_port
from videocopies.runtime.launch import CoreProcess, edge_process, issue_token, stop_process
from videocopies.testing.telegram_simulator import BotApiSimulator

from .harness import stopped_if_left

SECRET = "edge-secret" * 3


def _stop(process: subprocess.Popen[bytes]) -> str:
    code, err = stop_process(process)
    assert code == 0, err.decode()[-3000:]
    return err.decode()


def _inbox(url: str) -> list[tuple[int, str]]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT update_id, kind FROM inbox ORDER BY update_id").fetchall()


def test_updates_by_webhook_need_the_secret_and_are_stored_once(
    pg_server: LocalPostgres, database: str, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    port = free_port()
    hook = f"http://127.0.0.1:{port}/telegram/webhook"
    with BotApiSimulator(webhook_retry_delay=0.1) as sim:
        bot_token = sim.create_bot()
        core = CoreProcess(url, quote_secret=SECRET)
        # Edge starts beside core: its imports take seconds, and it retries core until core answers.
        edge = edge_process(
            core.url, issue_token(url, "edge-hook", "edge"), bot_token, sim.url, tmp_path / "edge",
            VIDEOCOPIES_WEBHOOK_URL=hook, VIDEOCOPIES_WEBHOOK_SECRET="a-long-webhook-secret",
            VIDEOCOPIES_WEBHOOK_LISTEN=f"127.0.0.1:{port}",
        )
        with stopped_if_left(edge), core:
            try:
                user = sim.create_user(bot_token, first_name="Ann", language_code="en")
                deadline = time.monotonic() + 30
                while sim.state.bot(bot_token).webhook is None:  # set by edge once it listens
                    assert time.monotonic() < deadline and edge.poll() is None, "edge set no webhook"
                    time.sleep(0.05)
                user.send_text("/start")
                welcome = asyncio.run(user.next_message(contains="50 coins", timeout=30))
                assert "welcome gift" in welcome.text
                forged = httpx.post(hook, json={"update_id": 999, "message": {}},
                                    headers={"X-Telegram-Bot-Api-Secret-Token": "guess"})
                assert forged.status_code == 401
            finally:
                _stop(edge)
    stored = _inbox(url)
    assert [kind for _, kind in stored] == ["text"] and 999 not in [u for u, _ in stored]


def test_long_polling_waits_out_a_core_restart_and_loses_nothing(
    pg_server: LocalPostgres, database: str, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    with BotApiSimulator() as sim:
        bot_token = sim.create_bot()
        core = CoreProcess(url, quote_secret=SECRET)
        edge = edge_process(core.url, issue_token(url, "edge-poll", "edge"), bot_token, sim.url, tmp_path / "edge")
        with stopped_if_left(edge), core:  # edge beside core, as above
            try:
                users = [sim.create_user(bot_token, first_name=f"U{n}", language_code="ru") for n in range(5)]
                users[0].send_text("/start")
                asyncio.run(users[0].next_message(contains="50 монет", timeout=30))
                core.stop()
                for user in users:  # sent while core is down: edge must hold them, not drop them
                    user.send_text("/help")
                time.sleep(2.0)
                core.start()
                for user in users:
                    asyncio.run(user.next_message(contains="/balance", timeout=30))
            finally:
                _stop(edge)
    stored = _inbox(url)
    assert len(stored) == 6 and len({u for u, _ in stored}) == 6  # every update once
