"""The bot's conversation: one inbox event in, the replies out (as outbox messages).

Every business step is a use case with its own transaction; the conversation only chooses
which, and what to say. The replies carry a dedup key made from the event, so handling an
event again (after a crash before it was marked done) says nothing twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs

from videocopies.application import use_cases as uc
from videocopies.application.errors import Conflict, NotFound, ServiceBusy
from videocopies.application.objects import SOURCE_GONE
from videocopies.application.ports import (
    UNREADABLE,
    BotUser,
    BotUsers,
    Clock,
    InboxEvent,
    OutboxMessage,
    PaidInvoice,
    StoredVideo,
)
from videocopies.application.use_cases.joined import new_or_joined
from videocopies.domain.coins import CoinAccount, InsufficientCoins, LotKind, parse_invite
from videocopies.domain.orders import OrderNotInState, OrderState
from videocopies.domain.payments import DEFAULT_PACKAGES, PackageCatalog, PaymentMismatch
from videocopies.domain.pricing import PricingPolicy, Quote, QuoteAlreadyUsed, QuoteExpired, QuoteKeys, TariffRetired
from videocopies.domain.shared import DomainError, LotId, OrderId, UserId
from videocopies.telegram_limits import CLOUD_DOWNLOAD_BYTES, DEFAULT_MAX_PIXEL_RATE, DEFAULT_MAX_SECONDS

VIDEO_TYPES = ("video/mp4", "video/quicktime", "video/webm", "video/x-matroska", "video/mpeg")
_REFUSAL_SCREENS = {
    "too_big": "video_too_big", "unavailable": "video_unavailable", "not_a_video": "video_format",
    "unreadable": "video_format", "too_long": "video_too_long", "too_large_frame": "video_too_sharp",
}


# Text commands a whole batch of users can share a few statements for: they only greet,
# explain or show a balance (anything else, /history included, goes one event at a time).
_HISTORY = "/history"
_BUTTON_MAC_BYTES = 12  # with the key id, a button stays well under Telegram's 64 bytes
_HOUR = timedelta(hours=1)
_READS_BALANCE = ("/start", "/balance")


@attrs.frozen
class BotSettings:
    max_video_bytes: int = CLOUD_DOWNLOAD_BYTES
    max_video_seconds: float = DEFAULT_MAX_SECONDS
    max_pixel_rate: float = DEFAULT_MAX_PIXEL_RATE  # width × height × frames a second
    start_bonus: int = 50
    start_bonus_valid_for: timedelta | None = timedelta(days=30)
    orders_per_hour: int | None = 30  # None: no limit


def _button_terms(quote_id: str, terms: str) -> bytes:
    return f"confirm:{quote_id}:{terms}".encode()


def confirm_mac(keys: QuoteKeys, quote_id: str, terms: str = "") -> str:
    """A short MAC for the confirm button (`<key id>.<96 bits>`): the full quote token does not
    fit in 64 bytes, so the button names the stored quote (and repeats its copies and total for
    the reply) and proves core issued the button for exactly that."""
    return keys.sign(_button_terms(quote_id, terms), _BUTTON_MAC_BYTES)


def confirm_data(keys: QuoteKeys, quote_id: str, copies: int, total: int) -> str:
    terms = f"{copies}:{total}"
    return f"c:{quote_id}:{terms}:{confirm_mac(keys, quote_id, terms)}"


@attrs.define
class Conversation:
    uow: Any  # UowFactory
    users: BotUsers
    clock: Clock
    policy: PricingPolicy
    keys: QuoteKeys
    grant_coins: uc.GrantCoins
    quote_order: uc.QuoteOrder
    confirm_order: uc.ConfirmOrder
    cancel_order: uc.CancelOrder
    settings: BotSettings = BotSettings()
    credit_payment: uc.TakePayment | uc.CreditPayment | None = None
    reward_referral: uc.RewardReferral | None = None
    packages: PackageCatalog = DEFAULT_PACKAGES
    # Users this process stored as they are now: most events need no write to remember them.
    _known: dict[UserId, BotUser] = attrs.field(factory=dict, init=False)

    async def handle(self, event: InboxEvent) -> list[OutboxMessage]:
        first_contact = False
        if self._known.get(event.user.user_id) != event.user:
            first_contact = await self.users.remember(event.user, self.clock.now())
            self._knows(event.user)
        replies = _Replies(event)
        if event.kind == "video" and event.video is not None:
            await self._video(event.user, event.video, replies)
        elif event.kind == "button" and event.data:
            await self._button(event.user, event.data, replies)
        elif event.kind == "text":
            await self._text(event.user, (event.text or "").strip(), first_contact, replies)
        elif event.kind == "payment" and event.payment is not None:
            await self._paid(event.user, event.payment, replies)
        elif event.kind == UNREADABLE:
            replies.screen("unreadable")
        else:
            replies.screen("unknown")
        return replies.messages

    def detached(self, event: InboxEvent) -> bool:
        """Whether handling this event waits on the world outside (a payment asks the provider):
        it then keeps its own transactions instead of joining the inbox turn's."""
        return event.kind == "payment"

    def in_bulk(self, event: InboxEvent) -> bool:
        """Whether `handle_many` may take this event: not /history, and not an invite link
        (`/start ref_…`), whose referral goes one event at a time."""
        if event.kind != "text":
            return False
        command, words = _command(event.text), (event.text or "").split()
        return command != _HISTORY and not (command == "/start" and len(words) > 1)

    async def handle_many(self, events: Sequence[InboxEvent]) -> list[list[OutboxMessage]]:
        """`handle` for a batch of `in_bulk` events (each user's in order), with the same
        replies, in two transactions whatever the batch's size: the users remembered at
        once, then every start bonus due granted and every balance read together. This is
        what keeps a burst of /start from thousands of users from queueing behind itself."""
        now = self.clock.now()
        changed = {e.user.user_id: e.user for e in events if self._known.get(e.user.user_id) != e.user}
        if changed:
            await self.users.remember_many(list(changed.values()), now)
        for user in changed.values():
            self._knows(user)
        # Each user's first /start here asks for the start bonus; the grant, idempotent by its
        # lot id, decides who gets it (see _text).
        first_starts: dict[UserId, InboxEvent] = {}
        if self.settings.start_bonus:
            for event in events:
                if _command(event.text) == "/start":
                    first_starts.setdefault(event.user.user_id, event)
        grants = [self._start_bonus(user_id) for user_id in first_starts]
        readers = [e.user.user_id for e in events if _command(e.text) in _READS_BALANCE]
        granted = await self.grant_coins.many(grants, readers) if grants or readers else uc.Granted({}, frozenset())
        accounts = granted.accounts
        bonus_for = {
            event.update_id for user_id, event in first_starts.items() if _start_lot(user_id) in granted.new_lots
        }
        out = []
        for event in events:
            replies = _Replies(event)
            command = _command(event.text)
            view = account_view(accounts.get(event.user.user_id), now) if command in _READS_BALANCE else None
            bonus = self.settings.start_bonus if event.update_id in bonus_for else 0
            self._plain(command, event.user, bonus, view, replies)
            out.append(replies.messages)
        return out

    def _knows(self, user: BotUser) -> None:
        if len(self._known) > 100_000:
            self._known.clear()
        self._known[user.user_id] = user

    def _start_bonus(self, user_id: UserId) -> uc.GrantCoinsCommand:
        return uc.GrantCoinsCommand(user_id, LotKind.START, self.settings.start_bonus,
                                    self.settings.start_bonus_valid_for, _start_lot(user_id))

    async def _text(self, user: BotUser, text: str, first_contact: bool, replies: _Replies) -> None:
        words = text.split()
        command = _command(text)
        if command == _HISTORY:
            orders = await self.users.history(user.user_id, 10)
            replies.screen("history", orders=[dict(o) for o in orders])
            return
        bonus = referral = 0
        # A user's first /start brings the start bonus, once. Whether it is the first is
        # decided with the grant, in its transaction (the start lot exists or not), not by
        # the earlier write that remembered the user: a turn that died between the two, or
        # a bulk turn that failed after remembering, must not cost a newcomer the bonus.
        if command == "/start" and self.settings.start_bonus:
            granted = await self.grant_coins.many([self._start_bonus(user.user_id)])
            bonus = self.settings.start_bonus if _start_lot(user.user_id) in granted.new_lots else 0
        if command == "/start":
            referral = await self._referral(user, words[1] if len(words) > 1 else "", first_contact)
        view = await self._balance(user.user_id) if command in _READS_BALANCE else None
        self._plain(command, user, bonus, view, replies, referral)

    def _plain(
        self, command: str, user: BotUser, bonus: int, view: dict[str, Any] | None, replies: _Replies,
        referral: int = 0,
    ) -> None:
        if command == "/start" and view is not None:
            replies.screen("welcome", name=user.first_name, available=view["available"], bonus=bonus,
                           referral=referral)
        elif command == "/buy":
            self._packages(replies)
        elif command == "/invite":
            replies.screen("invite", user_id=user.user_id, amount=self._referral_bonus())
        elif command == "/help":
            replies.screen("help", max_mb=self.settings.max_video_bytes // (1024 * 1024),
                           max_s=int(self.settings.max_video_seconds))
        elif command == "/balance" and view is not None:
            replies.screen("balance", **view)
        else:
            replies.screen("unknown")

    async def _video(self, user: BotUser, video: StoredVideo, replies: _Replies) -> None:
        """Edge's refusal, when it gave one, picks the screen; core then checks the limits
        itself. A video without a measured length (a document edge could not probe) is not
        quoted: nothing about it says it fits."""
        limits = self.settings
        if refused := _REFUSAL_SCREENS.get(video.refusal or ""):
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
            replies.screen("choose_copies", prices=[[n, tariff.price_per_copy(n)] for n in tariff.offered])

    def _refused(self, screen: str, video: StoredVideo, replies: _Replies) -> None:
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

    async def _button(self, user: BotUser, data: str, replies: _Replies) -> None:
        kind, _, rest = data.partition(":")
        if kind == "n" and rest.isdigit():
            await self._quote(user, int(rest), replies)
        elif kind == "c":
            parts = rest.split(":")
            if len(parts) != 4 or not parts[1].isdigit() or not parts[2].isdigit():
                replies.screen("button_invalid")
                return
            quote_id, copies, total, mac = parts
            if not self.keys.verify(mac, _button_terms(quote_id, f"{copies}:{total}"), _BUTTON_MAC_BYTES):
                replies.screen("button_invalid")
            else:
                await self._confirm(user, OrderId(quote_id), int(copies), int(total), replies)
        elif kind == "x" and rest:
            await self._cancel(user, OrderId(rest), replies)
        elif data == "buy":
            self._packages(replies)
        elif kind == "b" and rest.isdigit() and (package := self.packages.by_stars(int(rest))) is not None:
            replies.messages.append(OutboxMessage(
                user.user_id, "invoice", {"stars": package.stars, "coins": package.coins, "offer": package.offer},
                replies.key(),
            ))
        else:
            replies.screen("button_invalid")

    async def _quote(self, user: BotUser, copies: int, replies: _Replies) -> None:
        source = await self.users.source(user.user_id)
        if source is None:
            replies.screen("send_video_first")
            return
        if source.source_key is None:  # the store no longer keeps it
            replies.screen("send_video_again")
            return
        if copies not in self.policy.current.offered:
            replies.screen("button_invalid")
            return
        def announce(quote: Quote) -> OutboxMessage:
            return replies.message(
                "quote", copies=quote.copies, per_copy=quote.price_per_copy, total=quote.total,
                expires_at=quote.expires_at.isoformat(),
                confirm_data=confirm_data(self.keys, quote.quote_id, quote.copies, quote.total),
            )

        try:
            await self.quote_order(
                uc.QuoteOrderCommand(user.user_id, source.source_key, copies, source.size, announce=announce)
            )
        except Conflict as refused:
            if refused.kind != SOURCE_GONE:
                raise
            replies.screen("send_video_again")  # its deletion was decided just now

    async def _confirm(self, user: BotUser, quote_id: OrderId, copies: int, total: int, replies: _Replies) -> None:
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
            replies.screen("not_enough_coins", needed=short.needed, available=short.available)
        except ServiceBusy:
            replies.screen("busy")
        except Conflict as refused:
            if refused.kind != SOURCE_GONE:
                raise
            replies.screen("send_video_again")  # nothing reserved

    async def _cancel(self, user: BotUser, order_id: OrderId, replies: _Replies) -> None:
        try:
            state = await self.cancel_order(uc.CancelOrderCommand(user.user_id, order_id))
        except NotFound:
            replies.screen("not_found")
            return
        if state is OrderState.CANCELLING:
            replies.screen("cancel_requested")
        # A cancelled order announces itself (order_closed, written with the refund).

    async def _referral(self, user: BotUser, argument: str, first_contact: bool) -> int:
        """A new user who came through an invite link: the referral is recorded, and both sides
        get the bonus with this user's first confirmed order (the amount is announced now).
        Anyone else (or a bad link) simply starts; the refusal is not the user's concern."""
        inviter = parse_invite(argument)
        if inviter is None or not first_contact or self.reward_referral is None:
            return 0
        try:
            await self.reward_referral(user.user_id, inviter)
        except DomainError:
            return 0
        return self._referral_bonus()

    def _referral_bonus(self) -> int:
        return self.reward_referral.bonus if self.reward_referral is not None else 0

    def _packages(self, replies: _Replies) -> None:
        replies.screen("packages", packages=[[p.stars, p.coins] for p in self.packages.packages])

    async def _paid(self, user: BotUser, paid: PaidInvoice, replies: _Replies) -> None:
        """Credit the coins once per charge (where the provider can be asked, once it lists the
        charge); the 'coins credited' screen is written with them. A repeated or late
        notification (reconciliation credited it already) says nothing."""
        coins = self.packages.coins_for(paid.invoice_payload, paid.total_amount, paid.currency)
        if coins is None or self.credit_payment is None:
            replies.screen("payment_unmatched", stars=paid.total_amount)
            return
        command = uc.CreditPaymentCommand(paid.charge_id, user.user_id, coins, paid.total_amount, paid.currency,
                                          paid.invoice_payload, paid.node)
        try:
            await self.credit_payment(command)
        except PaymentMismatch:
            replies.screen("payment_unmatched", stars=paid.total_amount)

    async def _balance(self, user_id: UserId) -> dict[str, Any]:
        now = self.clock.now()
        async with new_or_joined(self.uow) as uow:
            account = await uow.accounts.get(user_id)
        return account_view(account, now)


def _start_lot(user_id: UserId) -> LotId:
    return LotId(f"start-{user_id}")


def _command(text: str | None) -> str:
    text = (text or "").strip()
    return text.split()[0].split("@")[0].lower() if text else ""


def account_view(account: CoinAccount | None, now: datetime) -> dict[str, Any]:
    """The balance screen's figures: available, reserved, and the live lots by expiry."""
    if account is None:
        return {"available": 0, "reserved": 0, "lots": []}
    balance = account.balance(now)
    lots = [
        {"amount": lot.available, "expires_at": lot.expires_at.isoformat() if lot.expires_at else None}
        for lot in sorted(account.lots, key=lambda lot: (lot.expires_at is None, lot.expires_at or now))
        if lot.available > 0 and (lot.expires_at is None or lot.expires_at > now)
    ]
    return {"available": balance.available, "reserved": balance.reserved, "lots": lots}


class _Replies:
    def __init__(self, event: InboxEvent) -> None:
        self._event = event
        self.messages: list[OutboxMessage] = []
        self._count = 0

    def screen(self, screen: str, /, **values: Any) -> None:
        self.messages.append(self.message(screen, **values))

    def message(self, screen: str, /, **values: Any) -> OutboxMessage:
        """A reply a use case writes itself, in the transaction of the change it announces."""
        return OutboxMessage(self._event.user.user_id, "screen", {"screen": screen, **values}, self.key())

    def key(self) -> str:
        self._count += 1
        return f"in:{self._event.update_id}:{self._count}"
