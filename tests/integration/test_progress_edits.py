"""Edge's progress messages against the Bot API simulator through the real aiogram Bot: a state
is an edit of the order's message, never one Telegram would refuse as "not modified"; a state
already shown (by an edge before a restart) is taken as shown; a message the user deleted is
replaced by a new one once, and the next states edit the new one; after the order's end no
older state goes out; a spent button's message loses its buttons once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from videocopies.adapters.telegram.delivery import Delivery
from videocopies.adapters.telegram.progress import ProgressMessages
from videocopies.testing.telegram_simulator import BotApiSimulator

from .simulated_chat import simulated_chat

CANCEL = [[{"text": "Cancel", "data": "x:o1"}]]


@pytest.fixture
async def edge(tmp_path: Path) -> AsyncIterator[tuple[BotApiSimulator, Delivery, Any]]:
    async with simulated_chat(tmp_path) as chat:
        yield chat.sim, chat.delivery, chat.user


def row(id: int, chat_id: int, text: str, buttons: Any = CANCEL, **progress: Any) -> dict[str, Any]:
    return {"id": id, "chat_id": chat_id, "kind": "progress", "text": text, "buttons": buttons, "video": None,
            "invoice": None, "progress": {"order_id": "o1", **progress}}


def edits(user: Any) -> list[tuple[int, str]]:
    return [(e.message_id, e.text) for e in user.received if e.kind == "edit"]


async def test_states_edit_the_accepted_screen_and_never_repeat_what_it_shows(edge: Any) -> None:
    sim, delivery, user = edge
    progress = ProgressMessages(delivery, every_s=0.0)
    accepted = row(1, user.id, "Order accepted", carrier=True)
    shown_in, _ = await delivery.send(accepted, True)
    progress.sent(accepted, shown_in)

    assert await progress.show(row(2, user.id, "Making copy 1 of 2: 40%", edit=None), True) == {"message_id": shown_in}
    assert await progress.show(row(3, user.id, "Making copy 1 of 2: 40%", edit=shown_in), True) == {
        "message_id": shown_in}  # the same words and buttons: nothing is sent
    assert edits(user) == [(shown_in, "Making copy 1 of 2: 40%")]
    # An edge that restarted knows nothing of what is shown: Telegram's refusal means it is.
    again = ProgressMessages(delivery, every_s=0.0)
    assert await again.show(row(4, user.id, "Making copy 1 of 2: 40%", edit=shown_in), True) == {
        "message_id": shown_in}
    assert sim.state.not_modified == 1 and len(edits(user)) == 1

    closed = row(5, user.id, "All 2 copies are ready", buttons=[], edit=shown_in, final=True)
    assert await progress.show(closed, True) == {"message_id": shown_in}
    assert user.message(shown_in)["text"] == "All 2 copies are ready"
    assert "reply_markup" not in user.message(shown_in)  # Cancel is gone
    assert await progress.show(row(6, user.id, "Delivered: 2 of 2", edit=shown_in), True) == {}  # after the end
    assert user.message(shown_in)["text"] == "All 2 copies are ready"


async def test_a_deleted_message_is_replaced_once_and_the_next_states_edit_the_new_one(edge: Any) -> None:
    sim, delivery, user = edge
    progress = ProgressMessages(delivery, every_s=0.0)
    accepted = row(1, user.id, "Order accepted", carrier=True)
    shown_in, _ = await delivery.send(accepted, True)
    progress.sent(accepted, shown_in)
    user.delete(shown_in)

    moved = await progress.show(row(2, user.id, "Delivered: 1 of 2", edit=shown_in), True)
    assert moved["moved"] is True and moved["message_id"] != shown_in
    assert await progress.show(row(3, user.id, "Delivered: 2 of 2", edit=shown_in), True) == {
        "message_id": moved["message_id"]}  # this edge knows the new one; core is told with `moved`
    assert [e.method for e in user.received if e.message_id == moved["message_id"]] == [
        "sendMessage", "editMessageText"]
    assert sim.state.not_modified == 0


async def test_a_spent_buttons_message_loses_them_once(edge: Any) -> None:
    sim, delivery, user = edge
    progress = ProgressMessages(delivery)
    choice = {"id": 1, "chat_id": user.id, "kind": "screen", "text": "How many copies?",
              "buttons": [[{"text": "5", "data": "n:5"}]], "video": None, "invoice": None}
    pressed_on, _ = await delivery.send(choice, True)
    reply = {**choice, "id": 2, "text": "5 copies at 4 coins each", "buttons": [], "unbutton": pressed_on}
    await progress.unbutton(reply, True)
    await progress.unbutton({**reply, "id": 3}, True)  # a second reply to the same press
    assert "reply_markup" not in user.message(pressed_on)
    assert [e.method for e in user.received if e.kind == "edit"] == ["editMessageReplyMarkup"]
    user.delete(pressed_on)
    await ProgressMessages(delivery).unbutton(reply, True)  # gone: nothing to do, nothing raised
    assert sim.state.not_modified == 0


async def test_a_lapsed_quote_loses_its_confirm_button_and_an_edge_told_again_after_a_restart_stops_there(
    edge: Any,
) -> None:
    sim, delivery, user = edge
    quote = {"id": 1, "chat_id": user.id, "kind": "screen", "text": "5 copies at 4 coins each: 20 coins.",
             "buttons": [[{"text": "Confirm", "data": "c:q1"}]], "video": None, "invoice": None}
    lapsing, _ = await delivery.send(quote, True)
    lapsed = {"id": 2, "chat_id": user.id, "kind": "unbutton", "text": "", "buttons": [], "video": None,
              "unbutton": lapsing}  # core's word that the quote's price expired
    progress = ProgressMessages(delivery)
    await progress.unbutton(lapsed, False)
    await progress.unbutton({**lapsed, "id": 3}, False)  # told twice (a report lost): once is enough
    assert "reply_markup" not in user.message(lapsing)
    assert [e.message_id for e in user.received if e.kind == "edit"] == [lapsing]
    assert sim.state.not_modified == 0
    # An edge that restarted knows nothing of it: Telegram's "not modified" is taken as done, once.
    restarted = ProgressMessages(delivery)
    await restarted.unbutton(lapsed, False)
    await restarted.unbutton(lapsed, False)
    assert sim.state.not_modified == 1
