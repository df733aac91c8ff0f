"""The edge role's composition root: Telegram on one side (aiogram, against Telegram or the
simulator), core's HTTP API on the other. No database, no business logic.

Configuration from the environment: VIDEOCOPIES_BOT_TOKEN, VIDEOCOPIES_TELEGRAM_URL (a
Bot API server other than Telegram's, such as a local one or the simulator) with
VIDEOCOPIES_TELEGRAM_LOCAL=1 for a local Bot API server, VIDEOCOPIES_CORE_URL and
VIDEOCOPIES_NODE_TOKEN (an edge node's token), VIDEOCOPIES_WORK_DIR, and
VIDEOCOPIES_STORE_DIR when it shares core's local store (else signed URLs).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from pathlib import Path

import uvloop
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer

from videocopies.adapters.http.client import CoreClient, CoreRefused, CoreUnreachable, node_token_from_env
from videocopies.adapters.objectstore.filesystem import FilesystemObjectStore
from videocopies.adapters.telegram.edge import Receiver, Sender, SignedUrlSources, SourceStore, StoreSources

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
    try:
        try:
            me = await core.call("GET", "/v1/nodes/me")
        except (CoreRefused, CoreUnreachable) as refused:
            print(f"videocopies edge: {refused}", file=sys.stderr)
            return 2
        if me["role"] != "edge":
            print(f"videocopies edge: this token belongs to a {me['role']} node", file=sys.stderr)
            return 2
        work = Path(env.get("VIDEOCOPIES_WORK_DIR", "var/edge")) / me["name"]
        sources: SourceStore = (
            StoreSources(FilesystemObjectStore(Path(env["VIDEOCOPIES_STORE_DIR"])))
            if env.get("VIDEOCOPIES_STORE_DIR") else SignedUrlSources(core)
        )
        local = env.get("VIDEOCOPIES_TELEGRAM_LOCAL") == "1"
        max_mb = float(env.get("VIDEOCOPIES_MAX_VIDEO_MB", "50"))
        receiver = Receiver(bot, core, sources, work / "in", local_api=local, max_video_bytes=int(max_mb * 2**20))
        sender = Sender(bot, core, sources, work / "out")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        bot_user = await bot.get_me()
        log.info("edge %s serving @%s", me["name"], bot_user.username)
        await asyncio.gather(receiver.run(stop), sender.run(stop))
        return 0
    finally:
        await bot.session.close()
        await core.close()


def main() -> int:
    return uvloop.run(serve(dict(os.environ)))
