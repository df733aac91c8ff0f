"""The soak's drain takes every sent quote's Confirm off as production does at the quote's expiry,
without waiting for it: core's sweep queues the `unbutton` message in the transaction that forgets
the row, a fresh edge (the soak's is stopped by then) takes the button off the user's screen, and
the unbutton ends sent, for the prune. No row goes while its button is still on the screen."""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from videocopies.adapters.postgres.outbox import PostgresOutboxQueue
from videocopies.adapters.postgres.pool import make_pool
from videocopies.application.ports import OutboxMessage
from videocopies.domain.shared import UserId
from videocopies.embedded.postgres import LocalPostgres
from videocopies.runtime.launch import CoreProcess, edge_process, issue_token, stop_process
from videocopies.testing.telegram_simulator import BotApiSimulator

from .harness import stopped_if_left

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
import soak_drain  # noqa: E402
from soak_books import TRANSIENT  # noqa: E402
from soak_stack import BOT_TOKEN, fetch  # noqa: E402


async def _queue_quote(url: str, user: int, expires_at: datetime) -> None:
    payload = {"screen": "quote", "copies": 5, "per_copy": 4, "total": 20, "expires_at": expires_at.isoformat(),
               "confirm_data": "c:q1"}
    pool = make_pool(url, max_size=1)
    await pool.open(wait=True)
    try:
        await PostgresOutboxQueue(pool).queue([OutboxMessage(UserId(user), "screen", payload, "drain:quote:1")])
    finally:
        await pool.close()


def _buttons(message: dict[str, Any] | None) -> list[list[dict[str, Any]]]:
    return list(((message or {}).get("reply_markup") or {}).get("inline_keyboard", []))


def _until(url: str, query: str, timeout_s: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (rows := fetch(url, query)) or not rows[0][0]:
        assert time.monotonic() < deadline, f"never true: {query}"
        time.sleep(0.2)
    return rows[0][0]


def test_the_drain_takes_an_unexpired_quote_s_button_off_through_an_edge_and_leaves_no_row(
    pg_server: LocalPostgres, database: str, tmp_path: Path
) -> None:
    assert "lapsing_buttons" in TRANSIENT  # the soak's growth counts the table
    url = pg_server.url(database)
    with BotApiSimulator() as sim:
        sim.create_bot(BOT_TOKEN)
        user = sim.create_user(BOT_TOKEN, language_code="en")
        core = CoreProcess(url, quote_secret="drain-secret" * 3)
        # The soak's edge holds a claim 10 s: a claim of the stopped edge still waiting in core
        # may take the unbutton, which is then offered again after that hold.
        first = edge_process(core.url, issue_token(url, "soak-edge", "edge"), BOT_TOKEN, sim.url, tmp_path / "a",
                             VIDEOCOPIES_OUTBOX_HOLD_S="10")
        with stopped_if_left(first), core:
            user.send_text("/start")
            asyncio.run(user.next_message(contains="50 coins", timeout=60))
            asyncio.run(_queue_quote(url, user.id, datetime.now(UTC) + timedelta(minutes=10)))
            message_id = _until(url, "SELECT message_id FROM lapsing_buttons")
            assert _buttons(user.message(message_id))
            code, err = stop_process(first)  # as the soak stops its roles before the drain
            assert code == 0, err.decode()[-3000:]

            stack = SimpleNamespace(url=url, core=core, sim_url=sim.url, scratch=tmp_path)
            assert soak_drain.lapse_buttons(stack) == {"lapsed": 1, "unsent": 0}  # type: ignore[arg-type]

            assert fetch(url, "SELECT count(*) FROM lapsing_buttons") == [(0,)]
            assert fetch(url, "SELECT count(*) FROM outbox WHERE sent_at IS NULL") == [(0,)]
            assert _buttons(user.message(message_id)) == []
    edits = [e.method for e in user.received if e.kind == "edit" and e.message_id == message_id]
    assert edits == ["editMessageReplyMarkup"]


def test_with_nothing_lapsing_the_drain_starts_no_edge(pg_server: LocalPostgres, database: str) -> None:
    stack = SimpleNamespace(url=pg_server.url(database))  # no core, no simulator: an edge could not start
    assert soak_drain.lapse_buttons(stack) == {"lapsed": 0, "unsent": 0}  # type: ignore[arg-type]
