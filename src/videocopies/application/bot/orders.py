"""The conversation about an order: a video checked against the limits, a quote for the
copies chosen, its confirmation and its cancellation; each step a use case, each refusal a
screen."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from videocopies.application import use_cases as uc
from videocopies.application.bot.buttons import confirm_data, video_key, video_ref
from videocopies.application.bot.replies import Replies
from videocopies.application.bot.settings import BotSettings
from videocopies.application.errors import Conflict, NotFound, ServiceBusy
from videocopies.application.objects import SOURCE_GONE
from videocopies.application.ports import BotUser, BotUsers, Clock, OutboxMessage, StoredVideo
from videocopies.application.use_cases._common import UowFactory
from videocopies.application.use_cases.joined import new_or_joined
from videocopies.domain.coins import InsufficientCoins
from videocopies.domain.orders import CopyState, OrderNotInState, OrderState
from videocopies.domain.payments import PackageCatalog
from videocopies.domain.pricing import PricingPolicy, Quote, QuoteAlreadyUsed, QuoteExpired, QuoteKeys, TariffRetired
from videocopies.domain.shared import OrderId

_REFUSAL_SCREENS = {
    "too_big": "video_too_big", "unavailable": "video_unavailable", "not_a_video": "video_format",
    "unreadable": "video_format", "too_long": "video_too_long", "too_large_frame": "video_too_sharp",
}
_NOT_VIDEOS = {"image": "not_video_picture", "audio": "not_video_sound"}
_HOUR = timedelta(hours=1)


class OrderTalk:
    """Part of Conversation (which holds these)."""

    uow: UowFactory
    users: BotUsers
    clock: Clock
    policy: PricingPolicy
    keys: QuoteKeys
    quote_order: uc.QuoteOrder
    confirm_order: uc.ConfirmOrder
    cancel_order: uc.CancelOrder
    settings: BotSettings
    packages: PackageCatalog

    async def _video(self, user: BotUser, video: StoredVideo, replies: Replies) -> None:
        """Edge's refusal, when it gave one, picks the screen; core then checks the limits
        itself. A video without a measured length (a document edge could not probe) is not
        quoted: nothing about it says it fits."""
        limits = self.settings
        if video.refusal == "not_a_video" and (kind := (video.mime_type or "").split("/")[0]) in _NOT_VIDEOS:
            replies.screen(_NOT_VIDEOS[kind])  # a photo, a sticker, a voice: what to send instead
        elif refused := _REFUSAL_SCREENS.get(video.refusal or ""):
            self._refused(refused, video, replies)
        elif video.mime_type is not None and not video.mime_type.startswith("video/"):
            replies.screen("video_format")
        elif video.size > limits.max_video_bytes or video.source_key is None:
            self._refused("video_too_big", video, replies)
        elif video.duration_s > limits.max_video_seconds:
            self._refused("video_too_long", video, replies)
        elif video.pixel_rate > limits.max_pixel_rate:
            self._refused("video_too_sharp", video, replies)
        elif video.duration_s <= 0 and not video.probed:
            replies.screen("video_unchecked", max_s=int(limits.max_video_seconds))
        else:
            await self.users.set_source(user.user_id, video)
            tariff = self.policy.current
            replies.screen("choose_copies", prices=[[n, tariff.price_per_copy(n)] for n in tariff.offered],
                           video=video_ref(user.user_id, video.source_key))

    def _refused(self, screen: str, video: StoredVideo, replies: Replies) -> None:
        limits = self.settings
        if screen == "video_too_big":
            replies.screen(screen, size_mb=round(video.size / (1024 * 1024), 1),
                           max_mb=limits.max_video_bytes // (1024 * 1024))
        elif screen == "video_too_long":
            replies.screen(screen, seconds=int(video.duration_s), max_s=int(limits.max_video_seconds))
        elif screen == "video_too_sharp":
            replies.screen(screen, max_mpx=round(limits.max_pixel_rate / 1e6),
                           fps_1080=int(limits.max_pixel_rate // (1920 * 1080)))
        else:
            replies.screen(screen)

    async def _quote(self, user: BotUser, copies: int, replies: Replies, ref: str | None = None) -> None:
        """A quote for the video the button was under (`ref`); a button from before buttons
        named their video means the user's latest."""
        if copies not in self.policy.current.offered:
            replies.screen("button_invalid")
            return
        if ref is not None:
            key = video_key(user.user_id, ref)
            size = await self.users.kept_source(user.user_id, key) if key else None
            if key is None or size is None:  # deleted by retention (or never this user's)
                replies.screen("send_video_again")
                return
        else:
            source = await self.users.source(user.user_id)
            if source is None:
                replies.screen("send_video_first")
                return
            if source.source_key is None:  # the store no longer keeps it
                replies.screen("send_video_again")
                return
            key, size = source.source_key, source.size

        def announce(quote: Quote) -> OutboxMessage:
            return replies.message("quote", **quote_screen(self.keys, quote))

        try:
            await self.quote_order(
                uc.QuoteOrderCommand(user.user_id, key, copies, size, announce=announce)
            )
        except Conflict as refused:
            if refused.kind != SOURCE_GONE:
                raise
            replies.screen("send_video_again")  # its deletion was decided just now

    async def _confirm(self, user: BotUser, quote_id: OrderId, copies: int, total: int, replies: Replies) -> None:
        # The button's MAC proved core issued it for this quote, so the stored quote is
        # presented; ConfirmOrder still checks it is this user's, unexpired and unused.
        limit = self.settings.orders_per_hour
        if limit is not None and await self.users.orders_since(user.user_id, self.clock.now() - _HOUR) >= limit:
            replies.screen("too_many_orders", limit=limit)  # nothing reserved
            return
        confirmed = replies.message("confirmed", order_id=quote_id, copies=copies, total=total)
        try:
            await self.confirm_order(uc.ConfirmOrderCommand(user.user_id, quote_id, None, confirmed))
        except NotFound:
            replies.screen("not_found")
        except (QuoteExpired, TariffRetired):
            replies.screen("quote_expired")
        except (QuoteAlreadyUsed, OrderNotInState):
            replies.screen("already_confirmed")
        except InsufficientCoins as short:
            replies.screen("not_enough_coins", needed=short.needed, available=short.available,
                           packages=[[p.stars, p.coins] for p in self.packages.packages])  # the way to buy
        except ServiceBusy:
            replies.screen("busy")
        except Conflict as refused:
            if refused.kind != SOURCE_GONE:
                raise
            replies.screen("send_video_again")  # nothing reserved

    async def _again(self, user: BotUser, order_id: OrderId, index: int, replies: Replies) -> None:
        """A copy from /history sent again, while the store keeps it."""
        async with new_or_joined(self.uow) as uow:
            order = await uow.orders.get(order_id)
        if order is None or order.user_id != user.user_id or not 0 <= index < len(order.copies):
            replies.screen("not_found")
            return
        copy = order.copies[index]
        if copy.state is not CopyState.DELIVERED or copy.object_key is None:
            replies.screen("not_found")
        elif await self.users.kept_copy(copy.object_key):
            replies.screen("copy_again", object_key=copy.object_key, n=index + 1, copies=len(order.copies))
        else:
            replies.screen("copy_gone")  # deleted by retention

    async def _cancel(self, user: BotUser, order_id: OrderId, replies: Replies) -> None:
        async with new_or_joined(self.uow) as uow:
            order = await uow.orders.get(order_id)
        if order is not None and order.user_id == user.user_id and order.is_final:
            replies.screen("cancel_too_late", state=order.state.value)  # a button left on a closed order
            return
        try:
            state = await self.cancel_order(uc.CancelOrderCommand(user.user_id, order_id))
        except NotFound:
            replies.screen("not_found")
            return
        if state is OrderState.CANCELLING:
            replies.screen("cancel_requested")
        # A cancelled order announces itself (order_closed, written with the refund).


def quote_screen(keys: QuoteKeys, quote: Quote) -> dict[str, Any]:
    """What the quote screen shows, its Confirm button signed for this quote."""
    return {
        "copies": quote.copies, "per_copy": quote.price_per_copy, "total": quote.total,
        "expires_at": quote.expires_at.isoformat(),
        "confirm_data": confirm_data(keys, quote.quote_id, quote.copies, quote.total),
    }
