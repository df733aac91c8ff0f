"""Core's API for edge: the inbox it stores updates in, and the outbox it sends from.

Edge stores every update here before it advances its Telegram offset; storing is idempotent
by update id. It takes outbox messages rendered in the user's language, sends them, and
reports each one: a copy is charged when its delivery is reported, once.
"""

# No `from __future__ import annotations`: FastAPI reads the dependency annotations at runtime.

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

import attrs
from fastapi import Depends, FastAPI, Path, Response
from pydantic import BaseModel, Field, StringConstraints, TypeAdapter, ValidationError

from videocopies.adapters.http.api import IDENTIFIER, MAX_BYTES, NO_NUL, SignedUrl, _Body, _Forbidden, _signed
from videocopies.adapters.http.metrics import CoreMetrics
from videocopies.adapters.postgres.outbox import PostgresOutboxQueue
from videocopies.application import use_cases as uc
from videocopies.application.bot.events import (
    REASON_CHARS,
    UNREADABLE,
    BotUser,
    InboxEvent,
    PaidInvoice,
    StoredVideo,
    language_of,
)
from videocopies.application.bot.inbox import Inbox
from videocopies.application.bot.screens import render, text
from videocopies.application.duties import HoldDuty
from videocopies.application.errors import NotFound
from videocopies.application.nodes import Node
from videocopies.application.ports import Clock, ObjectStore, OutboxMessage
from videocopies.application.use_cases.undeliverable import UNREACHABLE, QueuedMessage, copy_of
from videocopies.domain.duties import POLL_TELEGRAM
from videocopies.domain.payments import DEFAULT_PACKAGES, OfferWithdrawn, PackageCatalog
from videocopies.domain.shared import UserId

SOURCE_KEY = r"^sources/[0-9]+/[A-Za-z0-9._-]+$"


class OutboxNews:
    """Wakes waiting outbox claims: set in-process when something was queued; a slow glance
    at the table covers news from other processes."""

    def __init__(self, glance: Callable[[], Awaitable[bool]], glance_every_s: float = 5.0) -> None:
        self._glance, self._every = glance, glance_every_s
        self._event = asyncio.Event()
        self._closing = False

    def queued(self) -> None:
        self._event.set()

    def close(self) -> None:
        """Core is stopping: waiting claims are answered now, not after their wait (a graceful
        stop would otherwise wait out every long poll)."""
        self._closing = True
        self._event.set()

    async def wait(self, timeout: float) -> bool:
        """True when something may be there to claim."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self._closing:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._event.wait(), min(remaining, self._every))
            if self._event.is_set():
                self._event.clear()
                return True
            if await self._glance():
                return True
        return False


@attrs.frozen
class EdgeApiServices:
    inbox: Inbox
    inbox_added: Callable[[], None]
    outbox: PostgresOutboxQueue
    news: OutboxNews
    languages: Callable[[Sequence[int]], Awaitable[dict[int, str]]]
    record_delivery: Callable[[uc.RecordDeliveryCommand], Awaitable[int]]
    give_up_delivery: Callable[[uc.RecordDeliveryCommand], Awaitable[int]]
    store: ObjectStore | None
    clock: Clock
    url_ttl: timedelta = timedelta(minutes=15)
    metrics: CoreMetrics = attrs.field(factory=CoreMetrics)
    hold_duty: HoldDuty | None = None  # None: this core grants no duties
    packages: PackageCatalog = DEFAULT_PACKAGES
    # Messages that will never be sent are closed through this (a copy among them is not
    # charged); None: only copies are given up, one by one, as before.
    give_up_messages: Callable[[Sequence[QueuedMessage], str], Awaitable[int]] | None = None
    # A user Telegram will not deliver to (blocked, chat not found): their orders stop.
    stop_serving: Callable[[uc.StopServingUserCommand], Awaitable[Any]] | None = None
    max_attempts: int = 8  # claims of one message before it is given up
    per_user: int = 3  # messages of one user in one claim
    keep_unreadable: Callable[[Sequence[tuple[int, str]], datetime], Awaitable[int]] | None = None


class UserIn(BaseModel):
    id: int = Field(ge=1, le=2**53)
    language_code: str | None = Field(None, max_length=16, pattern=IDENTIFIER)
    first_name: str | None = Field(None, max_length=256, pattern=NO_NUL)


class VideoIn(_Body):
    file_id: str = Field(min_length=1, max_length=256, pattern=IDENTIFIER)
    size: int = Field(ge=0, le=MAX_BYTES)
    duration_s: float = Field(ge=0, le=86_400)
    width: int = Field(ge=0, le=16_384)
    height: int = Field(ge=0, le=16_384)
    mime_type: str | None = Field(None, max_length=100, pattern=r"^[A-Za-z0-9.+/-]+$")
    source_key: str | None = Field(None, max_length=512, pattern=SOURCE_KEY)
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    file_unique_id: str | None = Field(None, min_length=1, max_length=256, pattern=IDENTIFIER)
    refusal: Literal["too_big", "unavailable", "not_a_video", "too_long", "too_large_frame", "unreadable"] | None = (
        Field(None, description="Why edge did not store the video (source_key is then null).")
    )
    fps: float = Field(0.0, ge=0, le=1000, description="Frames a second; 0 when unknown.")
    probed: bool = Field(False, description="duration_s, width, height and fps were measured on the file itself.")
    fetching: bool = Field(
        False, description="Edge is still fetching the file: the event (and its user's later ones) waits until edge "
                           "completes it through /v1/inbox/videos.",
    )


class PaymentIn(_Body):
    """Telegram's successful_payment, as edge received it."""

    charge_id: str = Field(min_length=1, max_length=256, pattern=IDENTIFIER)
    total_amount: int = Field(ge=1, le=10**9)
    currency: str = Field(pattern=r"^[A-Z]{3}$")
    invoice_payload: str = Field(max_length=128, pattern=NO_NUL)


class EventIn(_Body):
    update_id: int = Field(ge=0, le=2**53)
    user: UserIn
    kind: Literal["text", "video", "button", "payment", "unreadable"]
    text: str | None = Field(None, max_length=4096, pattern=NO_NUL)
    data: str | None = Field(None, min_length=1, max_length=64, pattern=NO_NUL)
    video: VideoIn | None = None
    payment: PaymentIn | None = None
    reason: str | None = Field(
        None, max_length=REASON_CHARS, pattern=NO_NUL, description="Kind `unreadable`: why edge could not read it."
    )


class PreCheckoutIn(_Body):
    user: UserIn
    currency: str = Field(max_length=8, pattern=r"^[A-Z]{3}$")
    total_amount: int = Field(ge=1, le=10**9)
    invoice_payload: str = Field(max_length=128, pattern=NO_NUL)


class PreCheckoutOut(BaseModel):
    ok: bool
    error_message: str | None = None


class InboxIn(_Body):
    events: list[Any] = Field(
        min_length=1, max_length=1000,
        description="Each an EventIn, judged on its own: one that does not validate is kept as `unreadable` "
                    "with the reason (keyed by its update_id when that is readable), never refusing the page.",
    )


class FetchedVideoIn(_Body):
    update_id: int = Field(ge=0, le=2**53)
    user_id: int = Field(ge=1, le=2**53)
    video: VideoIn


class FetchedVideosIn(_Body):
    videos: list[FetchedVideoIn] = Field(min_length=1, max_length=100)


class FetchingIn(_Body):
    limit: int = Field(100, ge=1, le=1000)


class InboxOut(BaseModel):
    stored: int  # events new to the inbox (unreadable ones included)
    unreadable: int  # events of this page kept, or only counted, as unreadable


class SourceUploadIn(_Body):
    user_id: int = Field(ge=1, le=2**53)
    update_id: int = Field(ge=0, le=2**53)
    size: int = Field(ge=0, le=MAX_BYTES)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class ButtonOut(BaseModel):
    text: str
    data: str


class VideoOut(BaseModel):
    key: str
    url: str | None


class InvoiceOut(BaseModel):
    title: str
    description: str
    payload: str
    label: str
    stars: int


class MessageOut(BaseModel):
    id: int
    chat_id: int
    kind: str
    text: str
    buttons: list[list[ButtonOut]]
    video: VideoOut | None
    invoice: InvoiceOut | None = None


class ClaimOut(BaseModel):
    messages: list[MessageOut]


class OutboxClaimIn(_Body):
    limit: int = Field(20, ge=1, le=500)
    wait_s: float = Field(0.0, ge=0.0, le=60.0)
    hold_s: float = Field(60.0, ge=5.0, le=600.0)  # unreported this long: another edge may send them


class SentIn(_Body):
    message_id: int | None = Field(None, ge=0, le=2**53)
    file_id: str | None = Field(None, max_length=256, pattern=IDENTIFIER)
    error: str | None = Field(None, max_length=1000, pattern=NO_NUL, description="Given up: Telegram refused it.")
    refusal: Literal["blocked", "chat_not_found", "too_large", "rejected", "gave_up"] | None = Field(
        None, description="What kind of refusal `error` is. blocked, chat_not_found: the user's open orders are "
                          "cancelled and their other messages given up; too_large: the copy is not charged and "
                          "the user is told.",
    )


class ReportIn(SentIn):
    id: int = Field(ge=1, le=2**62)


class ReportsIn(_Body):
    reports: list[ReportIn] = Field(min_length=1, max_length=500)


StatName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,63}$")]


class DutyIn(_Body):
    token: str = Field(min_length=16, max_length=128, pattern=IDENTIFIER)
    stats: dict[StatName, Annotated[int, Field(ge=0, le=2**53)]] | None = Field(
        None, max_length=256, description="Edge's own counters (unreadable, loop_restarts, flood_pauses, ...), "
                                         "shown in /metrics as videocopies_edge_<name>{node}.",
    )


class DutyOut(BaseModel):
    held: bool  # True: the caller holds the duty until `lease_until`
    holder: str
    lease_until: datetime
    ttl_s: float
    term: int


class RetryIn(_Body):
    after_s: float = Field(ge=0.0, le=3600.0)
    error: str = Field("", max_length=1000, pattern=NO_NUL)


_EVENTS = TypeAdapter(list[EventIn])
_ERROR_CLASSES = {
    "string_pattern_mismatch": "pattern", "string_unicode": "unicode", "literal_error": "kind",
    "missing": "missing", "extra_forbidden": "extra", "string_too_long": "length", "too_long": "length",
    "string_too_short": "length", "too_short": "length",
}


@attrs.frozen
class Judged:
    """A page of events, each judged on its own: what goes into the inbox in page order
    (unreadable events of a known user among them), unreadable updates of an unknown user
    (update id, reason), and the reason class of every unreadable item."""

    events: list[InboxEvent]
    unaddressed: list[tuple[int, str]]
    unreadable: list[str]


def judge(items: list[Any], node: str | None = None) -> Judged:
    """The whole page is validated at once; only a page that fails is read again item by
    item, so a valid page is parsed once. `node`: the edge that sent the page."""
    try:
        return Judged([_event(e, node) for e in _EVENTS.validate_python(items)], [], _edge_reasons(items))
    except ValidationError:
        pass
    judged = Judged([], [], [])
    for item in items:
        try:
            event = _event(EventIn.model_validate(item), node)
        except ValidationError as error:
            _unreadable(item, error, judged)
        else:
            judged.events.append(event)
            if event.kind == UNREADABLE:
                judged.unreadable.append("edge")
    return judged


def _edge_reasons(items: list[Any]) -> list[str]:
    return ["edge" for item in items if item.get("kind") == UNREADABLE]


def _event(e: EventIn, node: str | None = None) -> InboxEvent:
    if e.video and e.video.source_key and not e.video.source_key.startswith(f"sources/{e.user.id}/"):
        raise _Forbidden("a source is stored under its own user's prefix")
    video = StoredVideo(**e.video.model_dump()) if e.video else None
    # Which edge said a payment was made: a claim the provider never confirms is traced to it.
    paid = PaidInvoice(**e.payment.model_dump(), node=node) if e.payment else None
    user = _user(e.user)
    reason = (e.reason or "no reason given") if e.kind == UNREADABLE else None
    return InboxEvent(e.update_id, user, e.kind, e.text, video, e.data, payment=paid, reason=reason)


def _user(u: UserIn) -> BotUser:
    return BotUser(UserId(u.id), language_of(u.language_code), u.first_name)


def _unreadable(item: Any, error: ValidationError, judged: Judged) -> None:
    if not isinstance(item, dict):
        judged.unreadable.append("not_an_object")
        return
    first = error.errors(include_url=False, include_input=False)[0]
    kind = first["type"]
    judged.unreadable.append(_ERROR_CLASSES.get(kind) or ("type" if kind.endswith(("_type", "_parsing"))
                                                          else "range" if kind.startswith(("greater", "less"))
                                                          else "other"))
    where = ".".join(str(part) for part in first["loc"])
    reason = _printable(f"{where}: {first['msg']}" if where else first["msg"])
    update_id = item.get("update_id")
    if type(update_id) is not int or not 0 <= update_id <= 2**53:
        return  # nothing to key it by: only counted
    try:
        user = _user(UserIn.model_validate(item.get("user")))
    except ValidationError:
        judged.unaddressed.append((update_id, reason))
    else:
        judged.events.append(InboxEvent(update_id, user, UNREADABLE, reason=reason))


def _printable(text: str) -> str:
    """Storable as JSON text in PostgreSQL (no NUL, no lone surrogate), and short."""
    return text.encode("utf-8", "replace").decode().replace("\x00", "\\0")[:REASON_CHARS]


def add_edge_routes(
    app: FastAPI, services: EdgeApiServices, node_with: Callable[[str], Callable[..., Awaitable[Node]]]
) -> None:
    Storer = Annotated[Node, Depends(node_with("inbox"))]
    Sender = Annotated[Node, Depends(node_with("outbox"))]

    @app.post("/v1/inbox", tags=["edge"])
    async def store_updates(body: InboxIn, node: Storer) -> InboxOut:
        """Store updates before acknowledging them to Telegram; an update stored twice counts once.
        Each event is judged on its own: one that cannot be read is kept as `unreadable` with
        its reason, and its user (when known) is told."""
        judged = judge(body.events, node.name)
        now = services.clock.now()
        stored = await services.inbox.add(judged.events, now) if judged.events else 0
        if judged.unaddressed and services.keep_unreadable is not None:
            stored += await services.keep_unreadable(judged.unaddressed, now)
        for reason in judged.unreadable:
            services.metrics.inbox_unreadable.labels(reason).inc()
        if stored:
            services.inbox_added()
            services.metrics.inbox_stored.inc(stored)
        return InboxOut(stored=stored, unreadable=len(judged.unreadable))

    @app.post("/v1/inbox/videos", tags=["edge"])
    async def complete_videos(body: FetchedVideosIn, _node: Storer) -> dict[str, int]:
        """Edge fetched the files of video events it stored as fetching (or could not: `refusal`
        says why); each event's user is handled from there. Completing one twice is a no-op."""
        completed = 0
        for item in body.videos:
            key = item.video.source_key
            if key and not key.startswith(f"sources/{item.user_id}/"):
                raise _Forbidden("a source is stored under its own user's prefix")
            video = StoredVideo(**item.video.model_dump(exclude={"fetching"}))
            completed += await services.inbox.complete_video(item.update_id, UserId(item.user_id), video)
        if completed:
            services.inbox_added()
        return {"completed": completed}

    @app.post("/v1/inbox/fetching", tags=["edge"])
    async def videos_fetching(body: FetchingIn, _node: Storer) -> dict[str, list[dict[str, Any]]]:
        """Video events still waiting for their file, oldest first: an edge that starts fetches
        them (its predecessor may have stopped half-way)."""
        waiting = await services.inbox.fetching(body.limit)
        return {"videos": [
            {"update_id": e.update_id, "user_id": e.user.user_id, "video": attrs.asdict(e.video)}
            for e in waiting if e.video is not None
        ]}

    @app.post("/v1/payments/pre-checkout", tags=["edge"])
    async def pre_checkout(body: PreCheckoutIn, _node: Storer) -> PreCheckoutOut:
        """Before Telegram charges the user: does the invoice's package still sell at that price?
        Edge answers the pre-checkout query with this at once (Telegram allows 10 seconds)."""
        try:
            services.packages.check(body.invoice_payload, body.currency, body.total_amount)
        except OfferWithdrawn:
            return PreCheckoutOut(ok=False, error_message=text(language_of(body.user.language_code), "offer_withdrawn"))
        return PreCheckoutOut(ok=True)

    @app.post("/v1/sources/upload-url", tags=["edge"])
    async def source_upload_url(body: SourceUploadIn, _node: Storer) -> SignedUrl:
        """Where edge puts the video of an update it stored as fetching (`/v1/inbox`, then
        completes through `/v1/inbox/videos`); no other key is signed, so a node token cannot
        overwrite a source already stored or one of an update that never came."""
        if not await services.inbox.waiting_for_file(body.update_id, UserId(body.user_id)):
            raise NotFound("video event waiting for its file", f"{body.user_id}/{body.update_id}")
        key = f"sources/{body.user_id}/{body.update_id}.mp4"
        headers = {"x-amz-meta-sha256": body.sha256}
        return await _signed(services.store, services.url_ttl, key, "PUT", headers, sha256=body.sha256)

    @app.post("/v1/outbox/claim", tags=["edge"], response_model=ClaimOut)
    async def claim_outbox(body: OutboxClaimIn, _node: Sender) -> Response:
        """Messages to send, held for this edge for `hold_s`; long-polls up to `wait_s`. Replies
        come first, then copies with users taking turns; one chat's messages keep their order
        (send them in the order given). Messages for a user the bot cannot reach, and messages
        claimed `max_attempts` times without a report, are given up here instead."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + body.wait_s
        while True:
            claimed = await services.outbox.claim(services.clock.now(), body.limit, body.hold_s, services.per_user)
            given_up = await _give_up_dead(claimed)
            if given_up:
                claimed = [m for m in claimed if m.message_id not in given_up]
                if not claimed:
                    continue  # the next ones may be sendable
            if claimed or loop.time() >= deadline or not await services.news.wait(deadline - loop.time()):
                break
        languages = await services.languages(sorted({m.user_id for m in claimed}))
        messages = []
        for m in claimed:
            screen = render(m.kind, m.payload, languages.get(m.user_id, "en"))
            video = None
            if screen.video_key:
                url = None
                if services.store is not None:
                    url = await services.store.presigned_url(screen.video_key, services.url_ttl)
                video = {"key": screen.video_key, "url": url}
            messages.append({
                "id": m.message_id, "chat_id": m.user_id, "kind": m.kind, "text": screen.text,
                "buttons": [[{"text": b.text, "data": b.data} for b in row] for row in screen.buttons],
                "video": video, "invoice": attrs.asdict(screen.invoice) if screen.invoice else None,
            })
        # A batch is hundreds of screens: written out directly, as ClaimOut describes it,
        # rather than built as models and then checked against them field by field.
        return Response(json.dumps({"messages": messages}, ensure_ascii=False).encode(), media_type="application/json")

    async def _give_up_dead(claimed: Sequence[QueuedMessage]) -> set[int]:
        blocked = [m for m in claimed if m.blocked]
        worn = [m for m in claimed if not m.blocked and m.attempts > services.max_attempts]
        if services.give_up_messages is None or not (blocked or worn):
            return set()
        if blocked:
            await services.give_up_messages(blocked, "blocked")
            services.metrics.outbox_given_up.labels("blocked").inc(len(blocked))
        for m in worn:
            await services.give_up_messages([m], f"gave up after {m.attempts - 1} attempts: never reported")
        if worn:
            services.metrics.outbox_given_up.labels("attempts").inc(len(worn))
        return {m.message_id for m in [*blocked, *worn]}

    async def _record(reports: Sequence[ReportIn]) -> dict[str, int]:
        """The rules of every report: a copy taken by Telegram is charged once; one refused is
        dropped, not charged. A refusal that means the user cannot be reached stops serving
        them; a copy too large to send is announced to its user."""
        by_id = {r.id: r for r in reports}
        debited = 0
        copies = await services.outbox.copies_among(sorted(by_id))
        for message in copies:
            report = by_id[message.message_id]
            if report.error is None:
                debited += await services.record_delivery(copy_of(message))
            else:
                await services.give_up_delivery(copy_of(message))
        recorded = await services.outbox.sent_many(
            [(r.id, r.model_dump(exclude_none=True, exclude={"id"})) for r in reports]
        )
        for r in reports:
            if r.error is not None:
                services.metrics.outbox_given_up.labels(r.refusal or "error").inc()
        too_large = [m for m in copies if by_id[m.message_id].refusal == "too_large"]
        if too_large:
            await services.outbox.queue([
                OutboxMessage(UserId(m.user_id), "screen", {
                    "screen": "copy_too_large", "n": int(m.payload["index"]) + 1, "copies": m.payload.get("copies", 1),
                }, f"out:{m.message_id}:too_large")
                for m in too_large
            ])
        unreachable = {r.id: r.refusal for r in reports if r.refusal in UNREACHABLE}
        if unreachable and services.stop_serving is not None:
            users = {m.user_id: unreachable[m.message_id] for m in await services.outbox.among(sorted(unreachable))}
            for user_id, why in sorted(users.items()):
                await services.stop_serving(uc.StopServingUserCommand(UserId(user_id), str(why)))
        services.news.queued()  # each chat's next message may be sent now
        return {"recorded": recorded, "debited": debited}

    @app.post("/v1/outbox/{message_id}/sent", tags=["edge"])
    async def message_sent(
        message_id: Annotated[int, Path(ge=1, le=2**62)], body: SentIn, _node: Sender
    ) -> dict[str, Any]:
        """Telegram took the message (or refused it for good, with `error` and `refusal`). A
        copy is charged when it was taken, once, however often this is reported."""
        if await services.outbox.get(message_id) is None:
            raise NotFound("outbox message", str(message_id))
        answer = await _record([ReportIn(id=message_id, **body.model_dump(exclude_none=True))])
        return {"recorded": bool(answer["recorded"]), "debited": answer["debited"]}

    @app.post("/v1/outbox/reports", tags=["edge"])
    async def messages_sent(body: ReportsIn, _node: Sender) -> dict[str, int]:
        """Many reports at once (one per message sent in a batch); the same rules as `/sent`."""
        answer = await _record(body.reports)
        services.metrics.outbox_sent.inc(answer["recorded"])
        return answer

    @app.post("/v1/duties/poll-telegram", tags=["edge"])
    async def poll_telegram(body: DutyIn, node: Storer) -> DutyOut:
        """Ask to be (or stay) the one edge that polls Telegram and sends the outbox; ask again
        well inside `ttl_s` and stop at once when `held` is false or the lease has run out."""
        if services.hold_duty is None:
            raise NotFound("duty", POLL_TELEGRAM)
        if body.stats is not None:
            services.metrics.edge_reported(node.name, body.stats, services.clock.now())
        lease = await services.hold_duty(POLL_TELEGRAM, node.name, body.token)
        return DutyOut(
            held=lease.held_with(body.token, services.clock.now()), holder=lease.holder, lease_until=lease.lease_until,
            ttl_s=services.hold_duty.ttl.total_seconds(), term=lease.term,
        )

    @app.post("/v1/outbox/{message_id}/retry", tags=["edge"])
    async def message_retry(
        message_id: Annotated[int, Path(ge=1, le=2**62)], body: RetryIn, _node: Sender
    ) -> dict[str, str]:
        """Telegram refused for now (429 retry_after, a network error): send again later, in
        order. Each claim is an attempt; a message claimed `max_attempts` times is given up
        instead (a copy among them is not charged): state `given_up`."""
        message = await services.outbox.get(message_id)
        if message is None:
            raise NotFound("outbox message", str(message_id))
        if message.attempts >= services.max_attempts and services.give_up_messages is not None:
            why = f"gave up after {message.attempts} attempts: {body.error or 'no reason given'}"
            await services.give_up_messages([message], why[:1000])
            services.metrics.outbox_given_up.labels("attempts").inc()
            services.news.queued()  # this chat's next message may be sent now
            return {"state": "given_up"}
        await services.outbox.retry_later(message_id, services.clock.now() + timedelta(seconds=body.after_s))
        return {"state": "held"}
