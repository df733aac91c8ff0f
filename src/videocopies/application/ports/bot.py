"""The bot's ports: the inbox and its events, and the users the bot knows.

What edge stores in core's inbox is a Telegram update, reduced to what core decides on.

Edge does the Telegram I/O (a video is already in object storage when its event arrives);
core never waits on Telegram. Every event carries Telegram's update id, which makes storing
it idempotent: an edge that retries after a lost answer stores nothing twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Protocol

import attrs

from videocopies.application.ports.unit_of_work import OutboxMessage, UnitOfWork
from videocopies.domain.shared import UserId


@attrs.frozen
class BotUser:
    user_id: UserId
    language: str  # "ru" or "en"
    first_name: str | None = None


def language_of(code: str | None) -> str:
    return "ru" if (code or "").lower().startswith(("ru", "uk", "be", "kk")) else "en"


UNREADABLE = "unreadable"  # the kind of an update that could not be read, kept with its reason
REASON_CHARS = 200


# Why edge did not store a video: it said so instead of failing the whole update.
VIDEO_REFUSALS = ("too_big", "unavailable", "not_a_video", "too_long", "too_large_frame", "unreadable")


@attrs.frozen
class StoredVideo:
    """A video the user sent, as edge found and stored it (key None: not stored, and
    `refusal` says why). With `probed`, duration, frame size and `fps` were measured on the
    file itself; without, they are Telegram's metadata (a document has none: duration 0).
    Fields added later have defaults, so payloads stored before them still read."""

    file_id: str
    size: int
    duration_s: float
    width: int
    height: int
    mime_type: str | None
    source_key: str | None
    sha256: str | None = None
    file_unique_id: str | None = None
    refusal: str | None = None
    fps: float = 0.0  # 0: unknown
    probed: bool = False
    fetching: bool = False  # edge is still fetching the file: the event, and its user's later ones, wait

    def given_up(self) -> StoredVideo:
        """The video as it stands when its file never came: Telegram could not give it."""
        return attrs.evolve(self, fetching=False, refusal="unavailable", source_key=None)

    @property
    def pixel_rate(self) -> float:
        """Pixels a second (0 when the frame rate is unknown)."""
        return self.width * self.height * self.fps


@attrs.frozen
class PaidInvoice:
    """Telegram's `successful_payment`: the user was charged for one of our invoices."""

    charge_id: str  # telegram_payment_charge_id, unique per payment
    total_amount: int
    currency: str
    invoice_payload: str
    node: str | None = None  # the edge node that reported it (core sets this, not edge)


@attrs.frozen
class InboxEvent:
    update_id: int
    user: BotUser
    kind: str  # text, video, button, payment, unreadable
    text: str | None = None
    video: StoredVideo | None = None
    data: str | None = None  # a pressed button's callback data
    event_id: int | None = None  # the inbox row, once stored
    payment: PaidInvoice | None = None
    reason: str | None = None  # kind "unreadable": why the update could not be read
    received_at: datetime | None = None  # when it was stored (read back from the inbox)
    message_id: int | None = None  # kind button: the Telegram message the button is on
    bot: str | None = None  # kind text: the bot's username, as edge's getMe said (an invite link names it)

    @property
    def waits_for_file(self) -> bool:
        return self.video is not None and self.video.fetching

    def to_payload(self) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "user": {"id": self.user.user_id, "language": self.user.language, "first_name": self.user.first_name},
        }
        if self.text is not None:
            payload["text"] = self.text
        if self.data is not None:
            payload["data"] = self.data
        if self.video is not None:
            payload["video"] = attrs.asdict(self.video)
        if self.payment is not None:
            payload["payment"] = attrs.asdict(self.payment)
        if self.reason is not None:
            payload["reason"] = self.reason
        if self.message_id is not None:
            payload["message_id"] = self.message_id
        if self.bot is not None:
            payload["bot"] = self.bot
        return payload

    @classmethod
    def from_payload(
        cls, update_id: int, kind: str, payload: Mapping[str, Any], event_id: int | None = None,
        received_at: datetime | None = None,
    ) -> InboxEvent:
        user = payload["user"]
        video, paid = payload.get("video"), payload.get("payment")
        return cls(
            update_id, BotUser(UserId(int(user["id"])), user["language"], user.get("first_name")), kind,
            payload.get("text"), StoredVideo(**video) if video else None, payload.get("data"), event_id,
            PaidInvoice(**paid) if paid else None, payload.get("reason"), received_at, payload.get("message_id"),
            payload.get("bot"),
        )


class BotUsers(Protocol):
    async def remember(self, user: BotUser, now: datetime) -> bool:
        """Store (or update) the user; True on first contact."""
        ...
    async def remember_many(self, users: Sequence[BotUser], now: datetime) -> set[UserId]:
        """Store (or update) each user (one per id); returns those seen for the first time."""
        ...
    async def set_source(self, user_id: UserId, video: StoredVideo | None) -> None: ...
    async def source(self, user_id: UserId) -> StoredVideo | None: ...
    async def kept_copy(self, key: str) -> bool:
        """Whether the store still keeps this copy (retention deletes copies after delivery)."""
        ...
    async def kept_source(self, user_id: UserId, key: str) -> int | None:
        """The size of a video this user sent (not only the last), while the store keeps it."""
        ...
    async def language(self, user_id: UserId) -> str:
        """The language the user chose with /language, else their Telegram's."""
        ...
    async def choose_language(self, user_id: UserId, language: str) -> None: ...
    async def history(self, user_id: UserId, limit: int) -> Sequence[Mapping[str, Any]]:
        """Recent confirmed orders, newest first: created_at, copies, state, charged, order_id and
        the indexes of the copies delivered."""
        ...
    async def orders_since(self, user_id: UserId, since: datetime) -> int:
        """How many orders the user confirmed since then."""
        ...


class InboxTurn(Protocol):
    """One transaction: users claimed, their events handled, each marked done with its replies.
    The users are this turn's until it ends; a processor that dies lets them go (its
    transaction rolls back) and the next turn handles what was not committed."""

    uow: UnitOfWork  # the turn's transaction, which the use cases it calls join

    async def claim(
        self, now: datetime, limit: int, others: int, users: Sequence[UserId] | None = None
    ) -> Sequence[InboxEvent]:
        """Up to `limit` waiting users whose events are all text and up to `others` other users
        that no other turn holds, not a user whose next event waits for its file (unless it has
        waited past the fetch timeout): their pending events, oldest first. Given `users`, only
        those, held by `hold` or not."""
        ...
    def hold(self, users: Sequence[UserId], until: datetime) -> None:
        """Keep these users from other turns until then, after this one commits (their payment is
        handled outside any transaction); a turn that claims them by name takes them back."""
        ...
    async def savepoint(self) -> None:
        """A point `undo` returns to: one per event, so a failing event is undone alone."""
        ...
    async def undo(self) -> None: ...
    def done(self, handled: Sequence[tuple[InboxEvent, Sequence[OutboxMessage], str]]) -> None:
        """Mark these handled with their outcome and queue their replies, in this order, at commit
        (a reply whose dedup key is known already is skipped)."""
        ...
    async def commit(self) -> None:
        """Everything at once; the claimed users with nothing left pending stop waiting."""
        ...


class Inbox(Protocol):
    async def add(self, events: Sequence[InboxEvent], now: datetime) -> int:
        """Store new events (an update id seen before is skipped); returns how many were new."""
        ...
    def turn(self) -> AbstractAsyncContextManager[InboxTurn]:
        """One transaction of the inbox processor (leaving it without `commit` rolls it back)."""
        ...
    async def complete_video(self, update_id: int, user_id: UserId, video: StoredVideo) -> bool:
        """Edge fetched (or could not fetch) the file of a waiting video event; its user is
        free to be handled at once. False when no such event waits."""
        ...
    async def waiting_for_file(self, update_id: int, user_id: UserId) -> bool:
        """This user's video event is stored and still waits for its file (edge may put its source)."""
        ...
    async def fetching(self, limit: int) -> Sequence[InboxEvent]:
        """Video events still waiting for their file, oldest first (for an edge that starts)."""
        ...
