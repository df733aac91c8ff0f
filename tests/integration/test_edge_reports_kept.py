"""Edge stops promptly when core cannot take its last reports, and loses none: a message it
sent while core answered 503 is reported by its next start, not offered again when its hold
ends and sent to the user a second time (a copy among them charged only then)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from videocopies.adapters.telegram.sender import KEPT_REPORTS, Sender

from .simulated_chat import NoCopies, simulated_chat


class _Core:
    """Core as edge's sender calls it: one claim answered with `messages`, then nothing. While
    `away`, a report is retried as the core client retries a 503 (for up to two minutes)."""

    def __init__(self, messages: list[dict[str, Any]], away: bool) -> None:
        self.messages, self.away, self.reports = messages, away, []  # type: ignore[var-annotated]

    async def call(self, method: str, path: str, body: dict[str, Any] | None = None, timeout: float = 30.0) -> Any:
        assert body is not None
        if path == "/v1/outbox/reports":
            if self.away:
                await asyncio.sleep(120)
            self.reports.extend(body["reports"])
            return {"recorded": len(body["reports"]), "debited": 0}
        answer, self.messages = self.messages, []
        if not answer:
            await asyncio.sleep(0.05)
        return {"messages": answer}


async def _run_until(sender: Sender, done: Any, seconds: float = 5.0) -> float:
    """Run the sender until `done()`, stop it; how long the stop took."""
    stop = asyncio.Event()
    running = asyncio.create_task(sender.run(stop))
    for _ in range(int(seconds / 0.05)):
        if done():
            break
        await asyncio.sleep(0.05)
    stop.set()
    asked = time.monotonic()
    await running
    return time.monotonic() - asked


async def test_reports_core_cannot_take_at_a_stop_are_kept_and_sent_by_the_next_start(tmp_path: Path) -> None:
    async with simulated_chat(tmp_path) as chat:
        welcome = {"id": 41, "chat_id": chat.user.id, "kind": "screen", "text": "Welcome", "buttons": [],
                   "video": None, "invoice": None}
        away = _Core([welcome], away=True)
        sender = Sender(chat.bot, away, NoCopies(), tmp_path / "out", pacer=chat.pacer, final_flush_s=1.0)  # type: ignore[arg-type]
        took = await _run_until(sender, lambda: chat.user.received)
        await sender.close()
        assert len(chat.user.received) == 1 and away.reports == []
        assert took < 3.0, took  # not the two minutes a 503 is retried for
        assert [r["id"] for r in json.loads((tmp_path / "out" / KEPT_REPORTS).read_text())] == [41]

        back = _Core([], away=False)
        again = Sender(chat.bot, back, NoCopies(), tmp_path / "out", pacer=chat.pacer)  # type: ignore[arg-type]
        await _run_until(again, lambda: back.reports)
        await again.close()
        assert [r["id"] for r in back.reports] == [41]
        assert not (tmp_path / "out" / KEPT_REPORTS).exists()
        assert len(chat.user.received) == 1  # sent once


async def test_a_stop_that_cannot_keep_its_reports_still_stops(tmp_path: Path) -> None:
    async with simulated_chat(tmp_path) as chat:
        welcome = {"id": 42, "chat_id": chat.user.id, "kind": "screen", "text": "Welcome", "buttons": [],
                   "video": None, "invoice": None}
        blocked = tmp_path / "not-a-directory"
        blocked.write_text("")  # the work directory cannot be made: keeping the report fails
        away = _Core([welcome], away=True)
        sender = Sender(chat.bot, away, NoCopies(), blocked / "out", pacer=chat.pacer, final_flush_s=0.5)  # type: ignore[arg-type]
        took = await _run_until(sender, lambda: chat.user.received)
        await sender.close()
        assert len(chat.user.received) == 1 and took < 3.0
