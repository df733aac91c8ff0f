"""States of an order's progress message in the sender's turns: only the newest queued state
of an order is worth sending (it keeps its place behind the copies queued before it, and the
order's end is never dropped), and a rendering figure waits until it is due."""

from __future__ import annotations

from typing import Any

from videocopies.adapters.telegram.pacing import Pacer
from videocopies.adapters.telegram.turns import COPY, ChatTurns


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def state(id: int, order: str = "o1", final: bool = False, rendering: bool = False) -> dict[str, Any]:
    kind = "order_closed" if final else "progress"
    return {"id": id, "chat_id": 1, "kind": kind,
            "progress": {"order_id": order, "edit": 5, "final": final, "rendering": rendering}}


def copy(id: int) -> dict[str, Any]:
    return {"id": id, "chat_id": 1, "kind": COPY}


def drain(turns: ChatTurns) -> list[int]:
    sent = []
    while (turn := turns.next(reply_room=True, copy_room=True)) is not None:
        sent.append(turn[0]["id"])
        turns.after(turn[0]["chat_id"], 0.0)
    return sent


def test_a_newer_state_of_an_order_drops_the_queued_one_and_keeps_its_place_behind_the_copies() -> None:
    clock = Clock()
    turns = ChatTurns(Pacer(clock=clock), clock)
    assert turns.add(copy(1)) == []
    assert turns.add(state(2)) == []
    assert turns.add(copy(3)) == []
    assert [m["id"] for m in turns.add(state(4))] == [2]  # the older state is reported, not sent
    assert turns.add(state(5, order="o2")) == []  # another order's message is another message
    assert [m["id"] for m in turns.add(state(6, final=True))] == [4]
    assert [m["id"] for m in turns.add(state(7))] == [7]  # nothing replaces the order's end
    assert turns.queued == 4
    clock.now += 10  # the chat's own pace allows a message a second
    sent = []
    while len(sent) < 4:
        turns.release_due()
        sent += drain(turns)
        clock.now += 1
    assert sent == [1, 3, 5, 6]


def test_a_rendering_figure_waits_until_it_is_due_and_other_states_do_not() -> None:
    clock = Clock()
    due = {3: clock.now + 2.5}
    turns = ChatTurns(Pacer(clock=clock), clock, lambda m: due.get(m["id"], 0.0))
    turns.add(state(3, rendering=True))
    assert drain(turns) == []
    clock.now += 2.5
    turns.release_due()
    assert drain(turns) == [3]
    turns.add(state(4, final=True))
    clock.now += 5
    turns.release_due()
    assert drain(turns) == [4]


def test_states_short_of_the_end_wait_with_the_copies_and_the_end_goes_with_the_replies() -> None:
    clock = Clock()
    turns = ChatTurns(Pacer(clock=clock), clock)
    turns.add(state(1))  # chat 1: a delivered copy's state
    turns.add({"id": 2, "chat_id": 2, "kind": "screen"})  # chat 2: a reply to what the user just did
    turns.add({**state(3, order="o3", final=True), "chat_id": 3})  # chat 3: an order's end
    sent = []
    while (turn := turns.next(reply_room=True, copy_room=True)) is not None:
        sent.append((turn[0]["id"], turn[1]))
    assert sent == [(2, True), (3, True), (1, False)]  # (message, urgent)
