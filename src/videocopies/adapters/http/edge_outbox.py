"""Edge's way out: the messages it claims to send, its reports of each, a later try, and the
duty of the one edge that polls Telegram and sends."""

# No `from __future__ import annotations`: FastAPI reads the dependency annotations at runtime.

import asyncio
import json
from collections.abc import Sequence
from datetime import timedelta
from typing import Annotated, Any

import attrs
from fastapi import APIRouter, Depends, Path, Request, Response

from videocopies.adapters.http.edge_api import EdgeApiServices
from videocopies.adapters.http.edge_models import (
    ClaimOut,
    DutyIn,
    DutyOut,
    OutboxClaimIn,
    ReportIn,
    ReportsIn,
    RetryIn,
    SentIn,
)
from videocopies.adapters.http.shared import NodeWith, client_left, news_or_leaving
from videocopies.adapters.screens import render
from videocopies.application import use_cases as uc
from videocopies.application.errors import NotFound
from videocopies.application.lapsing import UNBUTTON, buttons_until
from videocopies.application.ports import Node, OutboxMessage, QueuedMessage
from videocopies.application.use_cases.undeliverable import UNREACHABLE, copy_of
from videocopies.domain.duties import POLL_TELEGRAM
from videocopies.domain.shared import UserId

MESSAGE_ID = Annotated[int, Path(ge=1, le=2**62)]


def outbox_router(services: EdgeApiServices, node_with: NodeWith) -> APIRouter:
    router = APIRouter(tags=["edge"])
    Storer = Annotated[Node, Depends(node_with("inbox"))]
    Sender = Annotated[Node, Depends(node_with("outbox"))]

    @router.post("/v1/outbox/claim", response_model=ClaimOut)
    async def claim_outbox(body: OutboxClaimIn, _node: Sender, request: Request) -> Response:
        """Messages to send, held for this edge for `hold_s`; long-polls up to `wait_s`. Replies
        come first, then copies with users taking turns; one chat's messages keep their order
        (send them in the order given). Messages for a user the bot cannot reach, and messages
        claimed `max_attempts` times without a report, are given up here instead."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + body.wait_s
        # An edge that stops mid-poll must not have messages claimed for it afterwards: they
        # would wait out `hold_s` (a minute) before another edge could send them.
        gone = asyncio.ensure_future(client_left(request))
        try:
            while not gone.done():
                claimed = await services.outbox.claim(services.clock.now(), body.limit, body.hold_s, services.per_user)
                given_up = await _give_up_dead(services, claimed) | await _skip_unbuttons(services, claimed, body)
                if given_up:
                    claimed = [m for m in claimed if m.message_id not in given_up]
                    if not claimed:
                        continue  # the next ones may be sendable
                if claimed or loop.time() >= deadline:
                    break
                if not await news_or_leaving(services.news.wait(deadline - loop.time()), gone):
                    break
            else:
                claimed = []
        finally:
            gone.cancel()
        languages = await services.languages(sorted({m.user_id for m in claimed}))
        shown_in = await services.outbox.progress_messages(sorted({
            str(m.payload["order_id"]) for m in claimed if m.kind in PROGRESS_EDITS and m.payload.get("order_id")
        }))
        messages = []
        for m in claimed:
            if m.kind == UNBUTTON:
                messages.append({"id": m.message_id, "chat_id": m.user_id, "kind": m.kind, "text": "", "buttons": [],
                                 "video": None, "unbutton": m.payload[UNBUTTON]})
                continue
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
                "progress": _progress(m, shown_in), "unbutton": m.payload.get("unbutton"),
                "buttons_until": _buttons_until(m),
            })
        # A batch is hundreds of screens: written out directly, as ClaimOut describes it,
        # rather than built as models and then checked against them field by field.
        return Response(json.dumps({"messages": messages}, ensure_ascii=False).encode(), media_type="application/json")

    @router.post("/v1/outbox/{message_id}/sent")
    async def message_sent(message_id: MESSAGE_ID, body: SentIn, _node: Sender) -> dict[str, Any]:
        """Telegram took the message (or refused it for good, with `error` and `refusal`). A
        copy is charged when it was taken, once, however often this is reported."""
        if await services.outbox.get(message_id) is None:
            raise NotFound("outbox message", str(message_id))
        answer = await _record(services, [ReportIn(id=message_id, **body.model_dump(exclude_none=True))])
        return {"recorded": bool(answer["recorded"]), "debited": answer["debited"]}

    @router.post("/v1/outbox/reports")
    async def messages_sent(body: ReportsIn, _node: Sender) -> dict[str, int]:
        """Many reports at once (one per message sent in a batch); the same rules as `/sent`."""
        answer = await _record(services, body.reports)
        services.metrics.outbox_sent.inc(answer["recorded"])
        return answer

    @router.post("/v1/duties/poll-telegram")
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

    @router.post("/v1/outbox/{message_id}/retry")
    async def message_retry(message_id: MESSAGE_ID, body: RetryIn, _node: Sender) -> dict[str, str]:
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

    return router


PROGRESS_EDITS = ("progress", "order_closed")


def _buttons_until(m: QueuedMessage) -> float | None:
    """When a quote's Confirm stops meaning anything: its price expires (seconds since the epoch)."""
    until = buttons_until(m.kind, m.payload)
    return None if until is None else until.timestamp()


async def _skip_unbuttons(services: EdgeApiServices, claimed: Sequence[QueuedMessage], body: OutboxClaimIn) -> set[int]:
    """An edge that does not take buttons off for core (older; it keeps its own timer) would send
    an `unbutton` message as an empty text: those are closed here instead."""
    skipped = [m.message_id for m in claimed if m.kind == UNBUTTON and not body.unbuttons]
    if skipped:
        await services.outbox.sent_many([(i, {"skipped": "the edge does not take buttons off"}) for i in skipped])
    return set(skipped)


def _progress(m: QueuedMessage, shown_in: dict[str, int]) -> dict[str, Any] | None:
    """How a message belongs to its order's progress message: the accepted screen is that
    message (`carrier`); a later state edits it (`edit`: its Telegram message id, when known)."""
    if m.kind == "screen" and m.payload.get("screen") == "confirmed":
        return {"order_id": str(m.payload["order_id"]), "carrier": True}
    if m.kind not in PROGRESS_EDITS or not m.payload.get("order_id"):
        return None
    order_id = str(m.payload["order_id"])
    return {"order_id": order_id, "edit": shown_in.get(order_id), "final": m.kind == "order_closed",
            "rendering": m.kind == "progress" and m.payload.get("index") is not None}


async def _give_up_dead(services: EdgeApiServices, claimed: Sequence[QueuedMessage]) -> set[int]:
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


async def _record(services: EdgeApiServices, reports: Sequence[ReportIn]) -> dict[str, int]:
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
    moved = [r for r in reports if r.moved and r.message_id]
    for m in await services.outbox.among(sorted(r.id for r in moved)) if moved else []:
        if m.payload.get("order_id"):
            await services.outbox.progress_moved(str(m.payload["order_id"]), by_id[m.message_id].message_id or 0)
    unreachable = {r.id: r.refusal for r in reports if r.refusal in UNREACHABLE}
    if unreachable and services.stop_serving is not None:
        users = {m.user_id: unreachable[m.message_id] for m in await services.outbox.among(sorted(unreachable))}
        for user_id, why in sorted(users.items()):
            await services.stop_serving(uc.StopServingUserCommand(UserId(user_id), str(why)))
    services.news.queued()  # each chat's next message may be sent now
    return {"recorded": recorded, "debited": debited}
