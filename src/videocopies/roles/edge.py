"""The edge role's composition root: Telegram on one side (aiogram, against Telegram or the
simulator), core's HTTP API on the other. No database, no business logic. Its variables are
read by settings/edge.py; what it runs is runtime/edge_node.py. Wired by hand, as the worker:
dependency-injector's containers module loads FastAPI, which edge has no use for."""

from __future__ import annotations

import asyncio
import logging
import secrets
import signal
from collections.abc import Mapping

from aiogram import Bot

from videocopies.adapters.http.client import CoreClient
from videocopies.adapters.objectstore.filesystem import FilesystemObjectStore
from videocopies.adapters.telegram.commands import announce_commands
from videocopies.adapters.telegram.duty import PollingDuty
from videocopies.adapters.telegram.edge import SignedUrlSources, SourceStore, StoreSources
from videocopies.roles.bots import telegram_bot
from videocopies.roles.nodes_link import core_client, identified
from videocopies.runtime import heap
from videocopies.runtime.edge_node import EdgeParts, log_acknowledgements, serve_webhook, until_answered
from videocopies.runtime.role_run import run_role
from videocopies.settings.edge import EdgeSettings
from videocopies.settings.links import BotLink

log = logging.getLogger("videocopies.edge")


def bot_from_env(env: Mapping[str, str]) -> Bot:
    """The bot these variables name (VIDEOCOPIES_BOT_TOKEN, _TELEGRAM_URL, _TELEGRAM_LOCAL, _TELEGRAM_PROXY)."""
    link = BotLink.from_env(env)
    if link.token is None:
        raise SystemExit("videocopies edge: set VIDEOCOPIES_BOT_TOKEN")
    return telegram_bot(link)


def sources(settings: EdgeSettings, core: CoreClient) -> SourceStore:
    """Core's local store when edge shares it, else the URLs core signs."""
    if settings.store_dir is not None:
        return StoreSources(FilesystemObjectStore(settings.store_dir))
    return SignedUrlSources(core)


async def serve(settings: EdgeSettings) -> int:
    core = core_client(settings.core, settings.work_dir)
    if settings.acks_log is not None:
        log_acknowledgements(core, settings.acks_log)
    bot = telegram_bot(settings.bot)
    parts: EdgeParts | None = None
    try:
        if (me := await identified(core, "edge")) is None:
            return 2
        parts = EdgeParts(settings, bot, core, sources(settings, core), settings.work_dir / me["name"])
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        if (bot_user := await until_answered(stop, bot)) is None:
            return 0
        log.info("edge %s serving @%s", me["name"], bot_user.username)
        await announce_commands(bot)
        duty = PollingDuty(core, secrets.token_hex(16), stats=parts.stats)
        if settings.webhook is not None:
            # Every edge takes pushed updates; only the duty's holder sends, keeping each chat in order.
            await asyncio.gather(
                serve_webhook(settings.webhook, bot, parts.receiver, stop), duty.run(stop, parts.send)
            )
        else:
            await bot.delete_webhook()
            await duty.run(stop, parts.poll_and_send)
        return 0
    finally:
        if parts is not None:
            await parts.close()
        await bot.session.close()
        await core.close()


def main() -> int:
    settings = EdgeSettings.from_env()
    heap.settle()
    return run_role(serve(settings)) or 0  # None: stopped before it served
