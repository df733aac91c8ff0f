"""The bot's conversation: one inbox event in, the replies out (as outbox messages).

Every business step is a use case (in the inbox turn's transaction, which it joins); the
conversation only chooses which, and what to say: here the texts and buttons, in orders.py
a video, its quote, confirmation and cancellation, in account.py coins and payments. The
replies carry a dedup key made from the event (replies.py), so handling an event again
(after a crash before it was marked done) says nothing twice.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import attrs

from videocopies.application import use_cases as uc
from videocopies.application.bot.account import AccountTalk
from videocopies.application.bot.buttons import confirm_data, confirm_genuine, confirm_mac
from videocopies.application.bot.orders import OrderTalk
from videocopies.application.bot.replies import Replies, account_view, command_of
from videocopies.application.bot.settings import BotSettings
from videocopies.application.ports import (
    UNREADABLE,
    BotUser,
    BotUsers,
    Clock,
    InboxEvent,
    OutboxMessage,
)
from videocopies.application.use_cases.joined import after_commit
from videocopies.domain.coins import LotKind
from videocopies.domain.payments import DEFAULT_PACKAGES, PackageCatalog
from videocopies.domain.pricing import PricingPolicy, QuoteKeys
from videocopies.domain.shared import LotId, OrderId, UserId

# Text commands a whole batch of users can share a few statements for: they only greet,
# explain or show a balance (anything else, /history included, goes one event at a time).
_HISTORY = "/history"
_LANGUAGE = "/language"
_SPOKEN = ("en", "ru")  # what language_of gives, and the buttons of /language offer
_READS_BALANCE = ("/start", "/balance")
__all__ = ["BotSettings", "Conversation", "account_view", "confirm_data", "confirm_mac"]


@attrs.define
class Conversation(OrderTalk, AccountTalk):
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
    # Known once the write is committed (an event undone takes the user's row with it).
    _known: dict[UserId, BotUser] = attrs.field(factory=dict, init=False)

    async def handle(self, event: InboxEvent) -> list[OutboxMessage]:
        first_contact = False
        if self._known.get(event.user.user_id) != event.user:
            first_contact = await self.users.remember(event.user, self.clock.now())
            after_commit(functools.partial(self._knows, event.user))
        replies = Replies(event)
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
        command, words = command_of(event.text), (event.text or "").split()
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
            after_commit(functools.partial(self._knows, user))
        # Each user's first /start here asks for the start bonus; the grant, idempotent by its
        # lot id, decides who gets it (see _text).
        first_starts: dict[UserId, InboxEvent] = {}
        if self.settings.start_bonus:
            for event in events:
                if command_of(event.text) == "/start":
                    first_starts.setdefault(event.user.user_id, event)
        grants = [self._start_bonus(user_id) for user_id in first_starts]
        readers = [e.user.user_id for e in events if command_of(e.text) in _READS_BALANCE]
        granted = await self.grant_coins.many(grants, readers) if grants or readers else uc.Granted({}, frozenset())
        accounts = granted.accounts
        bonus_for = {
            event.update_id for user_id, event in first_starts.items() if start_lot(user_id) in granted.new_lots
        }
        out = []
        for event in events:
            replies = Replies(event)
            command = command_of(event.text)
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
                                    self.settings.start_bonus_valid_for, start_lot(user_id))

    async def _text(self, user: BotUser, text: str, first_contact: bool, replies: Replies) -> None:
        words = text.split()
        command = command_of(text)
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
            bonus = self.settings.start_bonus if start_lot(user.user_id) in granted.new_lots else 0
        if command == "/start":
            referral = await self._referral(user, words[1] if len(words) > 1 else "", first_contact)
        view = await self._balance(user.user_id) if command in _READS_BALANCE else None
        self._plain(command, user, bonus, view, replies, referral)

    def _plain(
        self, command: str, user: BotUser, bonus: int, view: dict[str, Any] | None, replies: Replies,
        referral: int = 0,
    ) -> None:
        if command == "/start" and view is not None:
            replies.screen("welcome", name=user.first_name, available=view["available"], bonus=bonus,
                           referral=referral)
        elif command == "/buy":
            self._packages(replies)
        elif command == "/invite":
            replies.screen("invite", user_id=user.user_id, amount=self._referral_bonus(), bot=replies.event.bot)
        elif command == "/help":
            replies.screen("help", max_mb=self.settings.max_video_bytes // (1024 * 1024),
                           max_s=int(self.settings.max_video_seconds))
        elif command == "/balance" and view is not None:
            replies.screen("balance", **view)
        elif command == _LANGUAGE:
            replies.screen("language", languages=list(_SPOKEN))
        else:
            replies.screen("unknown")

    async def _button(self, user: BotUser, data: str, replies: Replies) -> None:
        kind, _, rest = data.partition(":")
        if kind == "n" and (choice := rest.split(":", 1))[0].isdigit():  # n:<copies>[:<video>]
            await self._quote(user, int(choice[0]), replies, choice[1] if len(choice) > 1 else None)
        elif kind == "c":
            parts = rest.split(":")
            if len(parts) != 4 or not parts[1].isdigit() or not parts[2].isdigit():
                replies.screen("button_invalid")
                return
            quote_id, copies, total, mac = parts
            if not confirm_genuine(self.keys, quote_id, f"{copies}:{total}", mac):
                replies.screen("button_invalid")
            else:
                await self._confirm(user, OrderId(quote_id), int(copies), int(total), replies)
        elif kind == "x" and rest:
            await self._cancel(user, OrderId(rest), replies)
        elif kind == "h" and (again := rest.rpartition(":"))[2].isdigit() and again[0]:  # h:<order>:<copy>
            await self._again(user, OrderId(again[0]), int(again[2]), replies)
        elif data == "buy":
            self._packages(replies)
        elif kind == "l" and rest in _SPOKEN:
            await self.users.choose_language(user.user_id, rest)
            replies.screen("language_chosen")  # drawn when sent, in the language just chosen
        elif kind == "b" and rest.isdigit() and (package := self.packages.by_stars(int(rest))) is not None:
            replies.messages.append(OutboxMessage(
                user.user_id, "invoice", {"stars": package.stars, "coins": package.coins, "offer": package.offer},
                replies.key(),
            ))
        else:
            replies.screen("button_invalid")


def start_lot(user_id: UserId) -> LotId:
    return LotId(f"start-{user_id}")
