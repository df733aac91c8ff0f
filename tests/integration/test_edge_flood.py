"""When Telegram says 429, edge sends nothing more until the window has closed, to any chat,
and then slows down. The simulator here takes a burst as Telegram does (30) but only 10
messages a second after it, a third of what edge's pacing assumes, so 429s come; none of
edge's sends may land inside an open window, and everyone is still answered."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from videocopies.embedded.postgres import LocalPostgres
from videocopies.runtime.launch import CoreProcess, edge_process, issue_token, stop_process
from videocopies.testing.telegram_simulator import BotApiSimulator, SimulatedUser

from .harness import stopped_if_left


async def _all_welcomed(users: list[SimulatedUser]) -> None:
    await asyncio.gather(*(u.next_message(contains="50 coins", timeout=60) for u in users))


def test_a_429_pauses_every_send_for_its_window(pg_server: LocalPostgres, database: str, tmp_path: Path) -> None:
    url = pg_server.url(database)
    with BotApiSimulator(global_burst=30, global_rate=10, fault_rate=0.0, slow_rate=0.0) as sim:
        token = sim.create_bot()
        core = CoreProcess(url, quote_secret="flood" * 7)
        # Edge starts beside core: its imports take seconds, and it retries core until core answers.
        edge = edge_process(core.url, issue_token(url, "edge-1", "edge"), token, sim.url, tmp_path / "edge")
        with stopped_if_left(edge), core:
            try:
                deadline = time.monotonic() + 60
                while sim.state.bots[token].poll_generation < 1:
                    assert edge.poll() is None and time.monotonic() < deadline
                    time.sleep(0.05)
                users = [sim.create_user(token, language_code="en") for _ in range(80)]
                for user in users:
                    user.send_text("/start")
                asyncio.run(_all_welcomed(users))
                stats = sim.state.stats()
            finally:
                code, err = stop_process(edge)
            assert code == 0, err.decode()[-3000:]
    assert stats["refused_429"] >= 1, stats  # the limit was met...
    assert stats["flood_violations"] == 0, stats  # ...and never pushed against while it lasted
