"""The rows the user is told things by, as each handler writes them: the same kind, payload
and dedup key edge renders and deduplicates today (screens depend on every field)."""

from __future__ import annotations

import json
from typing import Any

from videocopies.adapters.memory import InMemoryStore
from videocopies.adapters.memory.unit_of_work import InMemoryUnitOfWork
from videocopies.application.use_cases.announcements import (
    CopyGivenUp,
    CopyReadyToSend,
    OrderSettled,
    outbox_rows,
)
from videocopies.domain.jobs import CopyArtifact
from videocopies.domain.orders import OrderState
from videocopies.domain.shared import OrderId, UserId

ORDER, USER = OrderId("o1"), UserId(7)


def _row(message: Any) -> tuple[int, str, str, str]:
    return message.user_id, message.kind, json.dumps(message.payload), message.dedup_key


def test_each_event_becomes_its_row() -> None:
    events = [
        CopyReadyToSend(USER, ORDER, 2, 5, CopyArtifact("copies/o1/2.mp4", 1234, "ab" * 32, 10.0, 720, 1280)),
        CopyGivenUp(USER, ORDER, 3, 5, "too_similar", 3, 4),
        OrderSettled(USER, ORDER, OrderState.DONE, 5, 16, 0, 4, None, 4),
        OrderSettled(USER, ORDER, OrderState.FAILED, 5, 4, 4, 12, "ffmpeg died", None),
    ]
    assert [_row(m) for m in outbox_rows(events)] == [
        (7, "copy_ready", '{"order_id": "o1", "index": 2, "copies": 5, "object_key": "copies/o1/2.mp4", '
                          '"size": 1234, "sha256": "' + "ab" * 32 + '"}', "copy:o1:2"),
        (7, "copy_failed", '{"order_id": "o1", "index": 3, "copies": 5, "reason": "too_similar", "tries": 3, '
                           '"returned": 4}', "copy-failed:o1:3"),
        (7, "order_closed", '{"order_id": "o1", "state": "done", "copies": 5, "charged": 16, "pending": 0, '
                            '"released": 4, "reason": null, "made": 4}', "closed:o1"),
        (7, "order_closed", '{"order_id": "o1", "state": "failed", "copies": 5, "charged": 4, "pending": 4, '
                            '"released": 12, "reason": "ffmpeg died"}', "closed:o1"),
    ]


async def test_recorded_events_are_written_at_commit_and_forgotten_without_one() -> None:
    store = InMemoryStore()
    async with InMemoryUnitOfWork(store) as uow:
        await uow.record(CopyGivenUp(USER, ORDER, 1, 5, "too_similar", 3, 4))
    assert store.outbox == {}  # left without commit: nothing said
    async with InMemoryUnitOfWork(store) as uow:
        await uow.record(CopyGivenUp(USER, ORDER, 1, 5, "too_similar", 3, 4))
        await uow.commit()
    assert [m.dedup_key for m in store.outbox.values()] == ["copy-failed:o1:1"]
