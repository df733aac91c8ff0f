"""The sender's turns: replies go before copies, chats waiting for copies take turns, a chat
pausing after a failure or a 429 waits its time, and a chat sends one message at a time."""

from __future__ import annotations

import asyncio
from typing import Any

from videocopies.adapters.telegram.pacing import Pacer
from videocopies.adapters.telegram.supervise import racing, until_stopped
from videocopies.adapters.telegram.turns import COPY, ChatTurns


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def message(id: int, chat_id: int, kind: str = "text") -> dict[str, Any]:
    return {"id": id, "chat_id": chat_id, "kind": kind}


def drain(turns: ChatTurns) -> list[int]:
    sent = []
    while (turn := turns.next(reply_room=True, copy_room=True)) is not None:
        sent.append(turn[0]["id"])
        turns.after(turn[0]["chat_id"], 0.0)
    return sent


def test_replies_go_first_and_copies_take_turns_between_chats() -> None:
    clock = Clock()
    turns = ChatTurns(Pacer(clock=clock), clock)
    for n in range(3):
        turns.add(message(10 + n, chat_id=1, kind=COPY))
    for n in range(2):
        turns.add(message(20 + n, chat_id=2, kind=COPY))
    turns.add(message(30, chat_id=3))
    assert turns.queued == 6
    assert drain(turns) == [30, 10, 20, 11, 21, 12]
    assert turns.queued == 0


def test_a_chat_sends_one_message_at_a_time_and_a_kind_without_room_waits() -> None:
    clock = Clock()
    turns = ChatTurns(Pacer(clock=clock), clock)
    turns.add(message(1, chat_id=5))
    turns.add(message(2, chat_id=5))
    turns.add(message(3, chat_id=6, kind=COPY))
    first = turns.next(reply_room=True, copy_room=False)
    assert first is not None and first[0]["id"] == 1 and first[1] is True
    assert turns.next(reply_room=True, copy_room=False) is None  # chat 5 is still sending
    copy = turns.next(reply_room=True, copy_room=True)
    assert copy is not None and copy[0]["id"] == 3 and copy[1] is False
    turns.after(5, 0.0)
    assert drain(turns) == [2]


def test_a_chat_pausing_after_a_failure_waits_its_time_with_the_message_first() -> None:
    clock = Clock()
    turns = ChatTurns(Pacer(clock=clock), clock)
    turns.add(message(1, chat_id=7))
    turns.add(message(2, chat_id=7))
    turn = turns.next(reply_room=True, copy_room=True)
    assert turn is not None
    turns.requeue(turn[0])
    turns.after(7, 2.0)
    assert turns.release_due() == 2.0 and turns.next(reply_room=True, copy_room=True) is None
    clock.now += 2.0
    assert turns.release_due() is None
    assert drain(turns) == [1, 2]


def test_a_dropped_chat_gives_back_its_queued_messages() -> None:
    clock = Clock()
    turns = ChatTurns(Pacer(clock=clock), clock)
    for n in range(3):
        turns.add(message(n, chat_id=8))
    turn = turns.next(reply_room=True, copy_room=True)
    assert turn is not None
    assert [m["id"] for m in turns.drop(8)] == [1, 2] and turns.queued == 0
    turns.after(8, 0.0)
    assert drain(turns) == []


async def test_racing_cancels_the_loser_and_until_stopped_gives_none_when_stopped() -> None:
    stop = asyncio.Event()
    assert await until_stopped(stop, asyncio.sleep(0, "done")) == "done"
    stop.set()
    assert await until_stopped(stop, asyncio.sleep(10, "late")) is None
    never = asyncio.Event()
    slow = await racing(never.wait(), asyncio.sleep(0), timeout=5)
    assert slow.cancelled()
    timed_out = await racing(never.wait(), never.wait(), timeout=0.01)
    assert timed_out.cancelled()
