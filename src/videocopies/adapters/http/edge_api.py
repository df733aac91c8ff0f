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
from pydantic import BaseModel, Field

from videocopies.adapters.http.api import IDENTIFIER, MAX_BYTES, NO_NUL, SignedUrl, _Body, _Forbidden, _signed
from videocopies.adapters.http.metrics import CoreMetrics
from videocopies.adapters.postgres.outbox import PostgresOutboxQueue
from videocopies.application import use_cases as uc
from videocopies.application.bot.events import BotUser, InboxEvent, PaidInvoice, StoredVideo, language_of
from videocopies.application.bot.inbox import Inbox
from videocopies.application.bot.screens import render, text
from videocopies.application.duties import HoldDuty
from videocopies.application.errors import NotFound
from videocopies.application.nodes import Node
from videocopies.application.ports import Clock, ObjectStore
from videocopies.domain.duties import POLL_TELEGRAM
from videocopies.domain.payments import DEFAULT_PACKAGES, OfferWithdrawn, PackageCatalog
from videocopies.domain.shared import OrderId, UserId

SOURCE_KEY = r"^sources/[0-9]+/[A-Za-z0-9._-]+$"


class OutboxNews:
    """Wakes waiting outbox claims: set in-process when something was queued; a slow glance
    at the table covers news from other processes."""

    def __init__(self, glance: Callable[[], Awaitable[bool]], glance_every_s: float = 5.0) -> None:
        self._glance, self._every = glance, glance_every_s
        self._event = asyncio.Event()

    def queued(self) -> None:
        self._event.set()

    async def wait(self, timeout: float) -> bool:
        """True when something may be there to claim."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
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


class PaymentIn(_Body):
    """Telegram's successful_payment, as edge received it."""

    charge_id: str = Field(min_length=1, max_length=256, pattern=IDENTIFIER)
    total_amount: int = Field(ge=1, le=10**9)
    currency: str = Field(pattern=r"^[A-Z]{3}$")
    invoice_payload: str = Field(max_length=128, pattern=NO_NUL)


class EventIn(_Body):
    update_id: int = Field(ge=0, le=2**53)
    user: UserIn
    kind: Literal["text", "video", "button", "payment"]
    text: str | None = Field(None, max_length=4096, pattern=NO_NUL)
    data: str | None = Field(None, min_length=1, max_length=64, pattern=NO_NUL)
    video: VideoIn | None = None
    payment: PaymentIn | None = None


class PreCheckoutIn(_Body):
    user: UserIn
    currency: str = Field(max_length=8, pattern=r"^[A-Z]{3}$")
    total_amount: int = Field(ge=1, le=10**9)
    invoice_payload: str = Field(max_length=128, pattern=NO_NUL)


class PreCheckoutOut(BaseModel):
    ok: bool
    error_message: str | None = None


class InboxIn(_Body):
    events: list[EventIn] = Field(min_length=1, max_length=1000)


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


class ReportIn(SentIn):
    id: int = Field(ge=1, le=2**62)


class ReportsIn(_Body):
    reports: list[ReportIn] = Field(min_length=1, max_length=500)


class DutyIn(_Body):
    token: str = Field(min_length=16, max_length=128, pattern=IDENTIFIER)


class DutyOut(BaseModel):
    held: bool  # True: the caller holds the duty until `lease_until`
    holder: str
    lease_until: datetime
    ttl_s: float
    term: int


class RetryIn(_Body):
    after_s: float = Field(ge=0.0, le=3600.0)
    error: str = Field("", max_length=1000, pattern=NO_NUL)


def add_edge_routes(
    app: FastAPI, services: EdgeApiServices, node_with: Callable[[str], Callable[..., Awaitable[Node]]]
) -> None:
    Storer = Annotated[Node, Depends(node_with("inbox"))]
    Sender = Annotated[Node, Depends(node_with("outbox"))]

    @app.post("/v1/inbox", tags=["edge"])
    async def store_updates(body: InboxIn, _node: Storer) -> dict[str, int]:
        """Store updates before acknowledging them to Telegram; an update stored twice counts once."""
        events = []
        for e in body.events:
            if e.video and e.video.source_key and not e.video.source_key.startswith(f"sources/{e.user.id}/"):
                raise _Forbidden("a source is stored under its own user's prefix")
            video = StoredVideo(**e.video.model_dump()) if e.video else None
            paid = PaidInvoice(**e.payment.model_dump()) if e.payment else None
            user = BotUser(UserId(e.user.id), language_of(e.user.language_code), e.user.first_name)
            events.append(InboxEvent(e.update_id, user, e.kind, e.text, video, e.data, payment=paid))
        stored = await services.inbox.add(events, services.clock.now())
        if stored:
            services.inbox_added()
            services.metrics.inbox_stored.inc(stored)
        return {"stored": stored}

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
        """Where edge puts a user's video before storing its update."""
        key = f"sources/{body.user_id}/{body.update_id}.mp4"
        headers = {"x-amz-meta-sha256": body.sha256}
        return await _signed(services.store, services.url_ttl, key, "PUT", headers, sha256=body.sha256)

    @app.post("/v1/outbox/claim", tags=["edge"], response_model=ClaimOut)
    async def claim_outbox(body: OutboxClaimIn, _node: Sender) -> Response:
        """Messages to send, oldest first, held for this edge for a minute; long-polls up to `wait_s`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + body.wait_s
        while True:
            claimed = await services.outbox.claim(services.clock.now(), body.limit, body.hold_s)
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

    @app.post("/v1/outbox/{message_id}/sent", tags=["edge"])
    async def message_sent(
        message_id: Annotated[int, Path(ge=1, le=2**62)], body: SentIn, _node: Sender
    ) -> dict[str, Any]:
        """Telegram took the message (or refused it for good, with `error`). A copy is charged
        when it was taken, once, however often this is reported."""
        message = await services.outbox.get(message_id)
        if message is None:
            raise NotFound("outbox message", str(message_id))
        debited = 0
        if message.kind == "copy_ready":
            copy = uc.RecordDeliveryCommand(OrderId(message.payload["order_id"]), int(message.payload["index"]))
            if body.error is None:
                debited = await services.record_delivery(copy)
            else:
                await services.give_up_delivery(copy)
        recorded = await services.outbox.sent(message_id, body.model_dump(exclude_none=True))
        services.news.queued()  # this chat's next message may be sent now
        return {"recorded": recorded, "debited": debited}

    @app.post("/v1/outbox/reports", tags=["edge"])
    async def messages_sent(body: ReportsIn, _node: Sender) -> dict[str, int]:
        """Many reports at once (one per message sent in a batch); the same rules as `/sent`."""
        reports = {r.id: r for r in body.reports}
        debited = 0
        for message in await services.outbox.copies_among(sorted(reports)):
            report = reports[message.message_id]
            copy = uc.RecordDeliveryCommand(OrderId(message.payload["order_id"]), int(message.payload["index"]))
            if report.error is None:
                debited += await services.record_delivery(copy)
            else:
                await services.give_up_delivery(copy)
        recorded = await services.outbox.sent_many(
            [(r.id, r.model_dump(exclude_none=True, exclude={"id"})) for r in body.reports]
        )
        services.metrics.outbox_sent.inc(recorded)
        services.news.queued()  # each chat's next message may be sent now
        return {"recorded": recorded, "debited": debited}

    @app.post("/v1/duties/poll-telegram", tags=["edge"])
    async def poll_telegram(body: DutyIn, node: Storer) -> DutyOut:
        """Ask to be (or stay) the one edge that polls Telegram and sends the outbox; ask again
        well inside `ttl_s` and stop at once when `held` is false or the lease has run out."""
        if services.hold_duty is None:
            raise NotFound("duty", POLL_TELEGRAM)
        lease = await services.hold_duty(POLL_TELEGRAM, node.name, body.token)
        return DutyOut(
            held=lease.held_with(body.token, services.clock.now()), holder=lease.holder, lease_until=lease.lease_until,
            ttl_s=services.hold_duty.ttl.total_seconds(), term=lease.term,
        )

    @app.post("/v1/outbox/{message_id}/retry", tags=["edge"])
    async def message_retry(
        message_id: Annotated[int, Path(ge=1, le=2**62)], body: RetryIn, _node: Sender
    ) -> dict[str, str]:
        """Telegram refused for now (429 retry_after, a network error): send again later, in order."""
        await services.outbox.retry_later(message_id, services.clock.now() + timedelta(seconds=body.after_s))
        return {"state": "held"}
