"""A press of a button that is spent once pressed (a number of copies, a quote's Confirm, a
language) makes every reply to it carry the message the button was on, for edge to take its
buttons off; other presses, and anything but a press, carry nothing. The message id survives
the inbox (stored with the event, read back with it)."""

from __future__ import annotations

import pytest

from videocopies.application.bot.replies import Replies
from videocopies.application.ports import BotUser, InboxEvent
from videocopies.domain.shared import UserId

ANN = BotUser(UserId(7), "en")


@pytest.mark.parametrize("data", ["n:5", "n:5:clip.mp4", "c:q1:5:20:mac", "l:ru"])
def test_the_replies_to_a_spent_press_take_the_buttons_off_its_message(data: str) -> None:
    replies = Replies(InboxEvent(1, ANN, "button", data=data, message_id=41))
    replies.screen("quote_expired")
    written = replies.message("confirmed", order_id="o1", copies=5, total=20)
    assert [m.payload.get("unbutton") for m in [*replies.messages, written]] == [41, 41]


@pytest.mark.parametrize("event", [
    InboxEvent(1, ANN, "button", data="x:o1", message_id=41),  # Cancel: the progress message keeps its own
    InboxEvent(1, ANN, "button", data="b:100", message_id=41),  # a package: another may be bought
    InboxEvent(1, ANN, "button", data="n:5"),  # no message known (an inline message, an old edge)
    InboxEvent(1, ANN, "text", text="/start"),
])
def test_other_events_leave_every_button_alone(event: InboxEvent) -> None:
    replies = Replies(event)
    replies.screen("unknown")
    assert "unbutton" not in replies.messages[0].payload


def test_the_pressed_message_is_kept_with_the_event() -> None:
    event = InboxEvent(1, ANN, "button", data="n:5", message_id=41)
    assert InboxEvent.from_payload(1, "button", event.to_payload()).message_id == 41
    assert InboxEvent.from_payload(2, "text", InboxEvent(2, ANN, "text", text="hi").to_payload()).message_id is None
