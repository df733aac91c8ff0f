"""Telegram Stars as the payment provider: the bot's transaction list (getStarTransactions,
page by page) and refunds (refundStarPayment), through aiogram.

aiogram is imported only when a provider is used: importing it costs about 3 s of CPU
(it builds every Bot API model), which core without a bot token never needs to pay."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from videocopies.application.errors import ProviderNotConfigured, ProviderUnavailable, RefundRefused
from videocopies.domain.payments import STARS, ProviderTransaction
from videocopies.domain.shared import UserId

if TYPE_CHECKING:
    from aiogram import Bot

PAGE = 100  # the most getStarTransactions returns at once


class TelegramPaymentProvider:
    def __init__(self, bot: Bot, page: int = PAGE) -> None:
        self._bot, self._page = bot, page

    async def transactions(self) -> AsyncIterator[ProviderTransaction]:
        from aiogram.exceptions import TelegramNetworkError, TelegramRetryAfter, TelegramServerError

        offset = 0
        while True:
            try:
                page = await self._bot.get_star_transactions(offset=offset, limit=self._page)
            except (TelegramNetworkError, TelegramServerError, TelegramRetryAfter) as error:
                raise ProviderUnavailable(f"getStarTransactions: {error}") from error
            for tx in page.transactions:
                found = _from_user(tx)
                if found is not None:
                    yield found
            if len(page.transactions) < self._page:
                return
            offset += len(page.transactions)

    async def since(self, position: int) -> tuple[Sequence[ProviderTransaction], int]:
        """getStarTransactions lists in chronological order, so the transactions after the
        first `position` are what came since; other Stars movements count but are left out."""
        from aiogram.exceptions import TelegramNetworkError, TelegramRetryAfter, TelegramServerError

        found: list[ProviderTransaction] = []
        while True:
            try:
                page = await self._bot.get_star_transactions(offset=position, limit=self._page)
            except (TelegramNetworkError, TelegramServerError, TelegramRetryAfter) as error:
                raise ProviderUnavailable(f"getStarTransactions: {error}") from error
            found += [tx for tx in map(_from_user, page.transactions) if tx is not None]
            position += len(page.transactions)
            if len(page.transactions) < self._page:
                return found, position

    async def refund(self, user_id: UserId, external_id: str) -> None:
        from aiogram.exceptions import TelegramBadRequest, TelegramNetworkError, TelegramRetryAfter, TelegramServerError

        try:
            await self._bot.refund_star_payment(user_id, external_id)
        except TelegramBadRequest as refused:
            if "CHARGE_ALREADY_REFUNDED" in refused.message:
                return  # a retry after a lost answer: the refund was made
            raise RefundRefused(external_id, refused.message) from refused
        except (TelegramNetworkError, TelegramServerError, TelegramRetryAfter) as error:
            raise ProviderUnavailable(f"refundStarPayment: {error}") from error


def _from_user(tx: Any) -> ProviderTransaction | None:
    """An invoice payment by a user (source), or its refund to the user (receiver); other
    Stars movements (withdrawals, ads, gifts) are not coin purchases."""
    for partner, refund in ((tx.source, False), (tx.receiver, True)):
        if partner is None or getattr(partner, "type", None) != "user":
            continue
        if getattr(partner, "transaction_type", "invoice_payment") not in (None, "invoice_payment"):
            continue
        user = partner.user
        return ProviderTransaction(tx.id, UserId(user.id), tx.amount, STARS, partner.invoice_payload, refund=refund)
    return None


class UnconfiguredPaymentProvider:
    """No bot token was given to this process: there is no provider to ask."""

    async def transactions(self) -> AsyncIterator[ProviderTransaction]:
        raise ProviderNotConfigured("no payment provider: set VIDEOCOPIES_BOT_TOKEN for core")
        yield  # pragma: no cover - makes this an async generator

    async def since(self, position: int) -> tuple[Sequence[ProviderTransaction], int]:
        raise ProviderNotConfigured("no payment provider: set VIDEOCOPIES_BOT_TOKEN for core")

    async def refund(self, user_id: UserId, external_id: str) -> None:
        raise ProviderNotConfigured("no payment provider: set VIDEOCOPIES_BOT_TOKEN for core")
