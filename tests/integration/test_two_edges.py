"""Two edges, one duty: only the edge holding the lease polls Telegram and sends; killing it
under load hands the duty to the other within the lease time, and no update is lost or
handled twice."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import psycopg

from videocopies.embedded.postgres import LocalPostgres
from videocopies.runtime.launch import CoreProcess, edge_process, issue_token, stop_process
from videocopies.testing.telegram_simulator import BotApiSimulator

from .harness import stopped_if_left

DUTY_TTL_S = 3.0
# Each user here writes ten times a second: far past Telegram's one message a second per
# chat, which edge would keep to. Rate limits are not what this test is about.
UNPACED = {"VIDEOCOPIES_TELEGRAM_RATE": "100000", "VIDEOCOPIES_TELEGRAM_BURST": "100000",
           "VIDEOCOPIES_TELEGRAM_CHAT_RATE": "1000", "VIDEOCOPIES_TELEGRAM_CHAT_BURST": "1000"}


def _holder(url: str) -> str | None:
    with psycopg.connect(url) as conn:
        row = conn.execute(  # core holds duties of its own (pruning, the object lifecycle)
            "SELECT holder FROM duty_leases WHERE duty = 'poll-telegram' AND lease_until > now()"
        ).fetchone()
    return row[0] if row else None


def _unsent(url: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT count(*) FROM outbox WHERE sent_at IS NULL").fetchone()[0]


def _wait_for_holder(url: str, other_than: str | None, timeout: float) -> tuple[str, float]:
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        holder = _holder(url)
        if holder is not None and holder != other_than:
            return holder, time.monotonic() - began
        time.sleep(0.05)
    raise AssertionError(f"no edge but {other_than} took the duty in {timeout} s")


def test_the_standby_edge_takes_over_when_the_active_one_dies(
    pg_server: LocalPostgres, database: str, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    # Telegram's rate limits are not what this test is about: they would only slow the replies.
    with BotApiSimulator(chat_rate=1000, chat_burst=1000, global_rate=100_000, global_burst=100_000) as sim:
        bot = sim.create_bot()
        core = CoreProcess(url, VIDEOCOPIES_DUTY_TTL_S=str(DUTY_TTL_S))
        # The edges start beside core: their imports take seconds, and they retry core until core answers.
        edges = {
            name: edge_process(core.url, issue_token(url, name, "edge"), bot, sim.url, tmp_path / name,
                               VIDEOCOPIES_OUTBOX_HOLD_S="5", **UNPACED)
            for name in ("edge-a", "edge-b")
        }
        with stopped_if_left(edges["edge-a"]), stopped_if_left(edges["edge-b"]), core:
            try:
                active, _ = _wait_for_holder(url, None, 30)
                users = [sim.create_user(bot, first_name=f"U{n}", language_code="en") for n in range(20)]
                sent = {user.id: 0 for user in users}
                stop = threading.Event()

                def load() -> None:  # each user keeps talking, before, during and after the takeover
                    while not stop.is_set():
                        for user in users:
                            user.send_text("/help")
                            sent[user.id] += 1
                        time.sleep(0.1)

                talking = threading.Thread(target=load)
                talking.start()
                time.sleep(2.0)
                edges[active].send_signal(signal.SIGKILL)
                killed_at = time.monotonic()
                standby, took_s = _wait_for_holder(url, active, 3 * DUTY_TTL_S)
                time.sleep(2.0)
                stop.set()
                talking.join()
                total = sum(sent.values())
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and (sum(len(u.received) for u in users) < total or _unsent(url)):
                    time.sleep(0.2)  # a reply the dead edge sent twice must not end the wait early
                edges[active].wait(10)
                code, err = stop_process(edges[standby])
                assert code == 0, err.decode()[-2000:]
            finally:
                for process in edges.values():
                    if process.poll() is None:
                        stop_process(process)
    assert took_s <= DUTY_TTL_S + 1.0, f"the standby took {took_s:.1f} s after the kill"
    assert time.monotonic() - killed_at > 0
    with psycopg.connect(url) as conn:
        updates = conn.execute("SELECT count(*), count(processed_at), count(DISTINCT update_id) FROM inbox").fetchone()
        replies = conn.execute("SELECT count(*), count(sent_at) FROM outbox").fetchone()
    assert updates == (total, total, total), "an update was lost or stored twice"
    assert replies == (total, total), "a reply was not queued once per update, or not sent"
    for user in users:
        texts = [entry.message["text"] for entry in user.received]
        # Every /help answered; a reply the dead edge sent but never reported may come twice.
        assert len(texts) >= sent[user.id], f"user {user.id} got {len(texts)} of {sent[user.id]} replies"
