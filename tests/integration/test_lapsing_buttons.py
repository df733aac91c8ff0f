"""A quote's Confirm button is taken off when its price expires, by whichever edge sends then:
core keeps the sent quote's message from edge's report and, at the quote's expiry, queues an
`unbutton` message for it. Over core's API (an edge that says it takes buttons off gets the
message; an older one has it closed unsent), edge's sender (it takes the buttons off and sends
nothing; facing an older core it claims without the field), and as processes: the edge that sent
the quote stops, another one starts, and the expired quote still loses its button, once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from videocopies.adapters.ffmpeg.clips import make_clip
from videocopies.adapters.http.answers import CoreRefused
from videocopies.adapters.telegram.sender import Sender
from videocopies.application.ports import OutboxMessage
from videocopies.domain.shared import UserId
from videocopies.embedded.postgres import LocalPostgres
from videocopies.runtime.launch import CoreProcess, edge_process, issue_token, stop_process
from videocopies.testing.telegram_simulator import BotApiSimulator

from .core_api import CoreApi, serve_core
from .harness import stopped_if_left
from .simulated_chat import NoCopies, simulated_chat


@pytest.fixture
async def api(pg_server: LocalPostgres, database: str) -> AsyncIterator[CoreApi]:
    async for served in serve_core(pg_server.url(database)):
        yield served


def quote(user: int, n: int, expires_at: datetime) -> OutboxMessage:
    payload = {"screen": "quote", "copies": 5, "per_copy": 4, "total": 20, "expires_at": expires_at.isoformat(),
               "confirm_data": f"c:q{n}"}
    return OutboxMessage(UserId(user), "screen", payload, f"test:quote:{n}")


async def test_an_expired_quote_is_unbuttoned_by_the_edge_that_claims_next(api: CoreApi) -> None:
    expires = datetime.now(UTC) + timedelta(seconds=2)
    await api.core.outbox.queue([quote(801, 1, expires), quote(802, 2, expires)])
    async with api.client("edge-1") as edge:
        claim = {"limit": 10, "unbuttons": True}
        first, second = (await edge.post("/v1/outbox/claim", json=claim)).json()["messages"]
        assert first["buttons"] and first["buttons_until"] == pytest.approx(expires.timestamp())
        reports = [{"id": first["id"], "message_id": 41}, {"id": second["id"], "message_id": 51}]
        assert (await edge.post("/v1/outbox/reports", json={"reports": reports})).json()["recorded"] == 2
        # User 802 confirmed in time: the reply to the press took that quote's buttons off.
        await api.core.outbox.queue([OutboxMessage(UserId(802), "screen", {
            "screen": "confirmed", "order_id": "o802", "copies": 5, "total": 20, "unbutton": 51}, "test:confirmed")])
        (reply,) = (await edge.post("/v1/outbox/claim", json=claim)).json()["messages"]
        assert reply["unbutton"] == 51
        await edge.post("/v1/outbox/reports", json={"reports": [{"id": reply["id"], "message_id": 52}]})

        assert (await edge.post("/v1/outbox/claim", json=claim)).json()["messages"] == []  # not yet
        # Core's sweep queues the word at the expiry; the long poll is woken by it.
        (lapsed,) = (await edge.post("/v1/outbox/claim", json={**claim, "wait_s": 10})).json()["messages"]
        assert datetime.now(UTC) >= expires
        assert (lapsed["chat_id"], lapsed["kind"], lapsed["unbutton"], lapsed["buttons"]) == (801, "unbutton", 41, [])
        await edge.post("/v1/outbox/reports", json={"reports": [{"id": lapsed["id"]}]})
        await asyncio.sleep(2.5)  # two more sweeps: the quote's buttons lapse once, the pressed one's never
        assert (await edge.post("/v1/outbox/claim", json=claim)).json()["messages"] == []


async def test_an_older_edge_gets_no_unbutton_message_to_send_as_text(api: CoreApi) -> None:
    expires = datetime.now(UTC) + timedelta(seconds=1)
    await api.core.outbox.queue([quote(803, 3, expires)])
    async with api.client("edge-1") as edge:
        (sent,) = (await edge.post("/v1/outbox/claim", json={"limit": 10})).json()["messages"]
        await edge.post("/v1/outbox/reports", json={"reports": [{"id": sent["id"], "message_id": 61}]})
        await api.until("SELECT 1 FROM outbox WHERE kind = 'unbutton' AND user_id = 803", timeout=10)
        # An edge of before (it takes expired buttons off by its own timer) is given nothing to send.
        assert (await edge.post("/v1/outbox/claim", json={"limit": 10})).json()["messages"] == []
    ((delivery,),) = await api.rows("SELECT delivery FROM outbox WHERE kind = 'unbutton' AND sent_at IS NOT NULL")
    assert "skipped" in delivery


QUOTE_TTL_S = 25  # long enough for a quote to be pressed before its edge stops


def _buttons(message: dict[str, Any] | None) -> list[str]:
    rows = ((message or {}).get("reply_markup") or {}).get("inline_keyboard", [])
    return [b["callback_data"] for row in rows for b in row]


def test_an_expired_quote_loses_its_button_after_its_edge_stopped_and_another_took_over(
    pg_server: LocalPostgres, database: str, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    clip = make_clip(tmp_path / "clip.mp4", seconds=2).read_bytes()
    with BotApiSimulator() as sim:
        token = sim.create_bot()
        core = CoreProcess(url, quote_secret="lapsing-secret" * 3, VIDEOCOPIES_QUOTE_TTL_S=str(QUOTE_TTL_S),
                           VIDEOCOPIES_DUTY_TTL_S="3")
        objects = tmp_path / "objects"
        first = edge_process(core.url, issue_token(url, "edge-a", "edge"), token, sim.url, tmp_path / "a", objects)
        with stopped_if_left(first), core:
            waiting, pressed = (sim.create_user(token, language_code="en") for _ in range(2))
            chosen_at: dict[int, float] = {}

            async def quoted(user: Any) -> Any:
                user.send_text("/start")
                await user.next_message(contains="50 coins", timeout=60)
                user.send_video(clip, width=360, height=640, duration=2)
                choose = await user.next_message(contains="How many copies", timeout=60)
                chosen_at[user.id] = time.monotonic()  # the quote is made after this
                user.press(choose.message_id, choose.buttons[0])
                return await user.next_message(contains="coins each", timeout=60)

            async def story() -> tuple[Any, Any]:
                lapsing, kept = await asyncio.gather(quoted(waiting), quoted(pressed))
                pressed.press(kept.message_id, kept.buttons[0])  # confirmed in time
                await pressed.next_message(contains="Order accepted", timeout=60)
                return lapsing, kept

            lapsing, kept = asyncio.run(story())
            expires = chosen_at[waiting.id] + QUOTE_TTL_S
            assert _buttons(waiting.message(lapsing.message_id))
            code, err = stop_process(first)  # the edge that sent the quotes, and knew when they expire
            assert code == 0, err.decode()[-3000:]
            second = edge_process(core.url, issue_token(url, "edge-b", "edge"), token, sim.url, tmp_path / "b",
                                  objects)
            try:
                while _buttons(waiting.message(lapsing.message_id)):
                    assert time.monotonic() < expires + 30, "the expired quote still has its Confirm button"
                    time.sleep(0.5)
                assert time.monotonic() >= expires  # not before its price expired
                time.sleep(3)  # the sweeps after it: nothing more
            finally:
                code, err = stop_process(second)
            assert code == 0, err.decode()[-3000:]
    def edits(user: Any, message_id: int) -> list[str]:
        return [e.method for e in user.received if e.kind == "edit" and e.message_id == message_id]

    assert edits(waiting, lapsing.message_id) == ["editMessageReplyMarkup"]
    assert edits(pressed, kept.message_id) == ["editMessageReplyMarkup"]  # by the press, not again at expiry
    assert sim.state.not_modified == 0


class _Core:
    """Core as edge's sender calls it: claims answered from a list (an exception is raised), the
    reports kept."""

    def __init__(self, claims: list[Any]) -> None:
        self.claims, self.bodies, self.reports = claims, [], []  # type: ignore[var-annotated]

    async def call(self, method: str, path: str, body: dict[str, Any] | None = None, timeout: float = 30.0) -> Any:
        assert body is not None
        if path == "/v1/outbox/reports":
            self.reports.extend(body["reports"])
            return {"recorded": len(body["reports"]), "debited": 0}
        self.bodies.append(body)
        if self.claims:
            answer = self.claims.pop(0)
            if isinstance(answer, Exception):
                raise answer
            return answer
        await asyncio.sleep(0.05)
        return {"messages": []}


async def test_the_sender_takes_lapsed_buttons_off_sends_nothing_and_claims_without_the_field_from_an_older_core(
    tmp_path: Path,
) -> None:
    async with simulated_chat(tmp_path) as chat:
        bot, user, pacer, delivery = chat.bot, chat.user, chat.pacer, chat.delivery
        quote = {"id": 1, "chat_id": user.id, "kind": "screen", "text": "5 copies at 4 coins each: 20 coins.",
                 "buttons": [[{"text": "Confirm", "data": "c:q1"}]], "video": None, "invoice": None}
        sent, _ = await delivery.send(quote, True)  # by an edge before this one
        lapsed = {"id": 7, "chat_id": user.id, "kind": "unbutton", "text": "", "buttons": [], "video": None,
                  "unbutton": sent}
        core = _Core([CoreRefused(422, {"detail": "unbuttons: extra fields not permitted"}), {"messages": [lapsed]}])
        sender = Sender(bot, core, NoCopies(), tmp_path, pacer=pacer)  # type: ignore[arg-type]
        stop = asyncio.Event()
        running = asyncio.create_task(sender.run(stop))
        try:
            for _ in range(100):
                if core.reports:
                    break
                await asyncio.sleep(0.05)
        finally:
            stop.set()
            await running
            await sender.close()
        assert core.reports == [{"id": 7}]
        assert "reply_markup" not in user.message(sent)
        assert [e.method for e in user.received] == ["sendMessage", "editMessageReplyMarkup"]  # nothing sent
        assert core.bodies[0]["unbuttons"] is True and "unbuttons" not in core.bodies[1]
