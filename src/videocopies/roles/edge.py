"""The edge role's composition root: Telegram on one side (aiogram, against Telegram or the
simulator), core's HTTP API on the other. No database, no business logic.

Configuration from the environment: VIDEOCOPIES_BOT_TOKEN, VIDEOCOPIES_TELEGRAM_URL (a
Bot API server other than Telegram's, such as a local one or the simulator) with
VIDEOCOPIES_TELEGRAM_LOCAL=1 for a local Bot API server, VIDEOCOPIES_CORE_URL and
VIDEOCOPIES_NODE_TOKEN (an edge node's token), VIDEOCOPIES_WORK_DIR, and
VIDEOCOPIES_STORE_DIR when it shares core's local store (else signed URLs).

Updates arrive by long polling, or by webhook when VIDEOCOPIES_WEBHOOK_URL (the public URL
Telegram posts to), VIDEOCOPIES_WEBHOOK_SECRET and VIDEOCOPIES_WEBHOOK_LISTEN (host:port
this process listens on, path /telegram/webhook) are set.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import signal
import sys
from pathlib import Path

import uvloop
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiohttp import web

from videocopies.adapters.http.client import CoreClient, WrongNode, identify, node_token_from_env
from videocopies.adapters.objectstore.filesystem import FilesystemObjectStore
from videocopies.adapters.telegram.duty import PollingDuty
from videocopies.adapters.telegram.edge import (
    ALLOWED_UPDATES,
    Receiver,
    Sender,
    SignedUrlSources,
    SourceStore,
    StoreSources,
    WebhookReceiver,
)
from videocopies.roles import heap

log = logging.getLogger("videocopies.edge")


def bot_from_env(env: dict[str, str]) -> Bot:
    token = env.get("VIDEOCOPIES_BOT_TOKEN")
    if not token:
        raise SystemExit("videocopies edge: set VIDEOCOPIES_BOT_TOKEN")
    if url := env.get("VIDEOCOPIES_TELEGRAM_URL"):
        api = TelegramAPIServer.from_base(url, is_local=env.get("VIDEOCOPIES_TELEGRAM_LOCAL") == "1")
        return Bot(token, session=AiohttpSession(api=api))
    return Bot(token)


async def serve(env: dict[str, str]) -> int:
    core = CoreClient(env.get("VIDEOCOPIES_CORE_URL") or "http://127.0.0.1:8700", node_token_from_env(env))
    bot = bot_from_env(env)
    closing: list[Receiver | Sender] = []
    try:
        try:
            me = await identify(core, "edge")
        except WrongNode as refused:
            print(f"videocopies edge: {refused}", file=sys.stderr)
            return 2
        work = Path(env.get("VIDEOCOPIES_WORK_DIR", "var/edge")) / me["name"]
        sources: SourceStore = (
            StoreSources(FilesystemObjectStore(Path(env["VIDEOCOPIES_STORE_DIR"])))
            if env.get("VIDEOCOPIES_STORE_DIR") else SignedUrlSources(core)
        )
        local = env.get("VIDEOCOPIES_TELEGRAM_LOCAL") == "1"
        max_mb = float(env.get("VIDEOCOPIES_MAX_VIDEO_MB", "50"))
        receiver = Receiver(bot, core, sources, work / "in", local_api=local, max_video_bytes=int(max_mb * 2**20))
        hold_s = float(env.get("VIDEOCOPIES_OUTBOX_HOLD_S", "60"))
        sender = Sender(bot, core, sources, work / "out", hold_s=hold_s)
        closing += [receiver, sender]
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        bot_user = await bot.get_me()
        log.info("edge %s serving @%s", me["name"], bot_user.username)
        duty = PollingDuty(core, secrets.token_hex(16))
        if webhook_url := env.get("VIDEOCOPIES_WEBHOOK_URL"):
            # Every edge takes pushed updates; only the duty's holder sends, keeping each chat in order.
            await asyncio.gather(_webhook(env, webhook_url, bot, receiver, stop), duty.run(stop, sender.run))
        else:
            await bot.delete_webhook()

            async def poll_and_send(lapse: asyncio.Event) -> None:
                await asyncio.gather(receiver.run(lapse), sender.run(lapse))

            await duty.run(stop, poll_and_send)
        return 0
    finally:
        for part in closing:
            await part.close()
        await bot.session.close()
        await core.close()


async def _webhook(env: dict[str, str], url: str, bot: Bot, receiver: Receiver, stop: asyncio.Event) -> None:
    secret = env.get("VIDEOCOPIES_WEBHOOK_SECRET") or ""
    if len(secret) < 16:
        raise SystemExit("videocopies edge: VIDEOCOPIES_WEBHOOK_SECRET must be at least 16 characters")
    host, _, port = env.get("VIDEOCOPIES_WEBHOOK_LISTEN", "127.0.0.1:8443").rpartition(":")
    runner = web.AppRunner(WebhookReceiver(receiver, bot, secret).app())
    await runner.setup()
    await web.TCPSite(runner, host or "127.0.0.1", int(port)).start()
    try:
        await bot.set_webhook(url, secret_token=secret, allowed_updates=ALLOWED_UPDATES)
        await stop.wait()
    finally:
        await runner.cleanup()


def main() -> int:
    heap.settle()
    return uvloop.run(serve(dict(os.environ)))
