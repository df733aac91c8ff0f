"""Edge's way in: the pages of updates it stores (each event judged on its own), the videos
it fetched, the payments it asks about and the sources it uploads."""

# No `from __future__ import annotations`: FastAPI reads the dependency annotations at runtime.

from typing import Annotated, Any

import attrs
from fastapi import APIRouter, Depends
from pydantic import TypeAdapter, ValidationError

from videocopies.adapters.http.edge_api import EdgeApiServices
from videocopies.adapters.http.edge_models import (
    EventIn,
    FetchedVideosIn,
    FetchingIn,
    InboxIn,
    InboxOut,
    PreCheckoutIn,
    PreCheckoutOut,
    SourceUploadIn,
    UserIn,
)
from videocopies.adapters.http.shared import Forbidden, NodeWith, SignedUrl, signed_url
from videocopies.adapters.screens import text
from videocopies.application.errors import NotFound
from videocopies.application.ports import (
    REASON_CHARS,
    UNREADABLE,
    BotUser,
    InboxEvent,
    Node,
    PaidInvoice,
    StoredVideo,
    language_of,
)
from videocopies.domain.objects.keys import is_source_of, source_key
from videocopies.domain.payments import OfferWithdrawn
from videocopies.domain.shared import UserId

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
    if e.video and e.video.source_key and not is_source_of(e.video.source_key, e.user.id):
        raise Forbidden("a source is stored under its own user's prefix")
    video = StoredVideo(**e.video.model_dump()) if e.video else None
    # Which edge said a payment was made: a claim the provider never confirms is traced to it.
    paid = PaidInvoice(**e.payment.model_dump(), node=node) if e.payment else None
    user = _user(e.user)
    reason = (e.reason or "no reason given") if e.kind == UNREADABLE else None
    return InboxEvent(e.update_id, user, e.kind, e.text, video, e.data, payment=paid, reason=reason,
                      message_id=e.message_id, bot=e.bot)


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


def inbox_router(services: EdgeApiServices, node_with: NodeWith) -> APIRouter:
    router = APIRouter(tags=["edge"])
    Storer = Annotated[Node, Depends(node_with("inbox"))]

    @router.post("/v1/inbox")
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

    @router.post("/v1/inbox/videos")
    async def complete_videos(body: FetchedVideosIn, _node: Storer) -> dict[str, int]:
        """Edge fetched the files of video events it stored as fetching (or could not: `refusal`
        says why); each event's user is handled from there. Completing one twice is a no-op."""
        completed = 0
        for item in body.videos:
            key = item.video.source_key
            if key and not is_source_of(key, item.user_id):
                raise Forbidden("a source is stored under its own user's prefix")
            video = StoredVideo(**item.video.model_dump(exclude={"fetching"}))
            completed += await services.inbox.complete_video(item.update_id, UserId(item.user_id), video)
        if completed:
            services.inbox_added()
        return {"completed": completed}

    @router.post("/v1/inbox/fetching")
    async def videos_fetching(body: FetchingIn, _node: Storer) -> dict[str, list[dict[str, Any]]]:
        """Video events still waiting for their file, oldest first: an edge that starts fetches
        them (its predecessor may have stopped half-way)."""
        waiting = await services.inbox.fetching(body.limit)
        return {"videos": [
            {"update_id": e.update_id, "user_id": e.user.user_id, "video": attrs.asdict(e.video)}
            for e in waiting if e.video is not None
        ]}

    @router.post("/v1/payments/pre-checkout")
    async def pre_checkout(body: PreCheckoutIn, _node: Storer) -> PreCheckoutOut:
        """Before Telegram charges the user: does the invoice's package still sell at that price?
        Edge answers the pre-checkout query with this at once (Telegram allows 10 seconds)."""
        try:
            services.packages.check(body.invoice_payload, body.currency, body.total_amount)
        except OfferWithdrawn:  # in the language the user chose with /language, else their Telegram's
            chosen = (await services.languages([body.user.id])).get(body.user.id)
            language = chosen or language_of(body.user.language_code)
            return PreCheckoutOut(ok=False, error_message=text(language, "offer_withdrawn"))
        return PreCheckoutOut(ok=True)

    @router.post("/v1/sources/upload-url")
    async def source_upload_url(body: SourceUploadIn, _node: Storer) -> SignedUrl:
        """Where edge puts the video of an update it stored as fetching (`/v1/inbox`, then
        completes through `/v1/inbox/videos`); no other key is signed, so a node token cannot
        overwrite a source already stored or one of an update that never came."""
        if not await services.inbox.waiting_for_file(body.update_id, UserId(body.user_id)):
            raise NotFound("video event waiting for its file", f"{body.user_id}/{body.update_id}")
        key = source_key(body.user_id, body.update_id)
        headers = {"x-amz-meta-sha256": body.sha256}
        return await signed_url(services.store, services.url_ttl, key, "PUT", headers, sha256=body.sha256)

    return router
