"""The rows the user is told things by, as each handler writes them: the same kind, payload
and dedup key edge renders and deduplicates today (screens depend on every field)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from videocopies.adapters.memory import InMemoryStore
from videocopies.adapters.memory.unit_of_work import InMemoryUnitOfWork
from videocopies.application.ports import OutboxMessage
from videocopies.application.use_cases.announcements import (
    CoinsCredited,
    CoinsExpired,
    CoinsGranted,
    CopyGivenUp,
    CopyReadyToSend,
    OrderSettled,
    PaymentConfirming,
    PaymentReversed,
    PurchaseRefunded,
    ReferralRewarded,
    outbox_rows,
)
from videocopies.domain.jobs import CopyArtifact
from videocopies.domain.orders import OrderState
from videocopies.domain.shared import LotId, OrderId, UserId

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


def test_the_coins_events_become_the_screens_use_cases_wrote_by_hand() -> None:
    """Payloads and keys as the use cases spelled them before they recorded events."""
    at = datetime(2026, 12, 31, 12, 0, tzinfo=UTC)
    events = [
        CoinsGranted(USER, LotId("grant-1"), 20, "sorry for the wait", at),
        CoinsGranted(USER, LotId("grant-2"), 5, None, None),
        CoinsExpired(USER, LotId("start-7"), 3),
        ReferralRewarded(USER, LotId("ref-7"), 10, invitee=True),
        ReferralRewarded(UserId(8), LotId("ref-8"), 10, invitee=False),
        CoinsCredited(USER, "ch-1", 50, 65),
        PaymentConfirming(USER, "ch-2", 100),
        PurchaseRefunded(USER, "ch-1", 50, 100),
        PaymentReversed(USER, "ch-3", 100, 30),
    ]
    assert [_row(m) for m in outbox_rows(events)] == [
        (7, "screen", '{"screen": "coins_granted", "amount": 20, "reason": "sorry for the wait", '
                      '"expires_at": "2026-12-31T12:00:00+00:00"}', "grant:grant-1"),
        (7, "screen", '{"screen": "coins_granted", "amount": 5, "reason": null, "expires_at": null}', "grant:grant-2"),
        (7, "screen", '{"screen": "coins_expired", "amount": 3}', "expired:start-7"),
        (7, "screen", '{"screen": "referral_invitee_rewarded", "amount": 10}', "ref-7"),
        (8, "screen", '{"screen": "referral_rewarded", "amount": 10}', "ref-8"),
        (7, "screen", '{"screen": "coins_credited", "coins": 50, "available": 65}', "paid:ch-1"),
        (7, "screen", '{"screen": "payment_confirming", "stars": 100}', "confirming:ch-2"),
        (7, "screen", '{"screen": "refunded", "coins": 50, "stars": 100}', "refund:ch-1"),
        (7, "screen", '{"screen": "payment_reversed", "stars": 100, "coins": 30}', "reversed:ch-3"),
    ]


async def test_a_use_cases_messages_keep_the_order_it_announced_them_in() -> None:
    store = InMemoryStore()
    async with InMemoryUnitOfWork(store) as uow:
        await uow.record(ReferralRewarded(USER, LotId("ref-7"), 10, invitee=True))
        await uow.outbox.add(OutboxMessage(USER, "screen", {"screen": "confirmed"}, "in:1:1"))
        await uow.commit()
    assert [m.dedup_key for m in store.outbox.values()] == ["ref-7", "in:1:1"]
