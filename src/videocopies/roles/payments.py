"""`videocopies payments reconcile|refund`: an operator's payment commands, run against the
database and Telegram directly (core need not be running), printing what was done. The bot
is the one edge serves (settings/commands.py: PaymentsSettings)."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from dependency_injector import providers

from videocopies.adapters.postgres import migrate
from videocopies.adapters.telegram.payments import TelegramPaymentProvider
from videocopies.application import use_cases as uc
from videocopies.application.errors import ApplicationError
from videocopies.domain.shared import DomainError
from videocopies.roles.containers import PostgresService, postgres_service
from videocopies.settings.commands import PaymentsSettings
from videocopies.settings.links import BotLink


def attach_provider(container: PostgresService, link: BotLink) -> Any:
    """Telegram as this process's payment provider when a bot token is given; the Bot to
    close on the way out (None: no token, and the unconfigured provider stays)."""
    if link.token is None:
        return None
    from videocopies.roles.bots import telegram_bot  # aiogram is loaded only for a bot

    bot = telegram_bot(link)
    container.gateways.payment_provider.override(providers.Object(TelegramPaymentProvider(bot)))
    return bot


@asynccontextmanager
async def _service(database_url: str) -> AsyncIterator[PostgresService]:
    schema = migrate.check(database_url)
    settings = PaymentsSettings.from_env()
    container = postgres_service(
        settings.service, {"database_url": database_url, "pool_size": 2, "jobs_keep_seed": schema.jobs_keep_seed}
    )
    bot = attach_provider(container, settings.bot)
    pool = container.gateways.pool()
    await pool.open(wait=True, timeout=30)
    try:
        yield container
    finally:
        await pool.close()
        await bot.session.close()


async def _run(database_url: str, args: argparse.Namespace) -> int:
    async with _service(database_url) as container:
        try:
            if args.action == "reconcile":
                result = await container.use_cases.reconcile_payments()(trust_list=args.trust_list)
                print("\n".join(result.lines()))
                # Exit 1 when something needs an operator's eyes (a reversal made now, a claim the
                # provider does not list, ...); 0 when it all adds up.
                return 1 if result.needs_attention else 0
            requested_by = f"cli:{getpass.getuser()}"
            refund = await container.use_cases.refund_payment()(
                uc.RefundPaymentCommand(args.charge_id, requested_by, args.reason)
            )
            print(f"refund {refund.external_id}: {refund.state.value}, {refund.coins} coins")
            return 0
        except (DomainError, ApplicationError) as refused:
            print(f"videocopies payments {args.action}: {refused}", file=sys.stderr)
            return 2


def main(database_url: str, args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_run(database_url, args))
    except migrate.SchemaError as refused:
        print(f"videocopies payments: {refused}", file=sys.stderr)
        return 2
