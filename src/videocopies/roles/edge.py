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

Telegram's limits: VIDEOCOPIES_TELEGRAM_RATE and _BURST (messages a second for the whole bot,
default 30 and 20), VIDEOCOPIES_TELEGRAM_CHAT_RATE and _CHAT_BURST (one chat, default 1 and 2);
sizes follow the Bot API server in use (see `telegram_limits`). VIDEOCOPIES_TELEGRAM_PROXY
sends every Bot API call through a proxy; VIDEOCOPIES_EDGE_SCRATCH_MB bounds the space that
downloads in hand may take (default 2048). VIDEOCOPIES_EDGE_ACKS_LOG names a file where edge
appends what core acknowledged (see `log_acknowledgements`): the soak's crash check reads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import uvloop
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiohttp import web

from videocopies.adapters.http.client import CoreClient, WrongNode, core_client_from_env, identify
from videocopies.adapters.objectstore.filesystem import FilesystemObjectStore
from videocopies.adapters.probe.source import inspect_source
from videocopies.adapters.scratch import scratch_stats
from videocopies.adapters.telegram.duty import PollingDuty
from videocopies.adapters.telegram.edge import (
    ALLOWED_UPDATES,
    BlockedChats,
    Downloads,
    Pacer,
    PacingSettings,
    Receiver,
    Sender,
    SignedUrlSources,
    SourceStore,
    StoreSources,
    WebhookReceiver,
    supervised,
)
from videocopies.runtime import heap
from videocopies.telegram_limits import MediaLimits

log = logging.getLogger("videocopies.edge")


def bot_from_env(env: dict[str, str]) -> Bot:
    """The bot, through VIDEOCOPIES_TELEGRAM_PROXY when set (http://, socks5://: aiogram's
    session takes it as it is)."""
    token = env.get("VIDEOCOPIES_BOT_TOKEN")
    if not token:
        raise SystemExit("videocopies edge: set VIDEOCOPIES_BOT_TOKEN")
    proxy = env.get("VIDEOCOPIES_TELEGRAM_PROXY") or None
    api = None
    if url := env.get("VIDEOCOPIES_TELEGRAM_URL"):
        api = TelegramAPIServer.from_base(url, is_local=env.get("VIDEOCOPIES_TELEGRAM_LOCAL") == "1")
    if api is None and proxy is None:
        return Bot(token)
    session = AiohttpSession(proxy=proxy) if api is None else AiohttpSession(api=api, proxy=proxy)
    return Bot(token, session=session)


class EdgeParts:
    """The receiver, the downloads and the sender of one edge, and what they count."""

    def __init__(self, env: dict[str, str], bot: Bot, core: CoreClient, sources: SourceStore, work: Path) -> None:
        limits = MediaLimits.from_env(env)
        self.blocked = BlockedChats()
        self._work = work
        self.restarts: Counter[str] = Counter()
        self.downloads = Downloads(
            bot, sources, work / "in", self._store_videos, download_limit=limits.max_bytes,
            inspect=lambda path: inspect_source(path, limits),
            budget_bytes=int(float(env.get("VIDEOCOPIES_EDGE_SCRATCH_MB", "2048")) * 2**20),
        )
        self.receiver = Receiver(bot, core, self.downloads, blocked=self.blocked, download_limit=limits.max_bytes)
        self.sender = Sender(
            bot, core, sources, work / "out", pacer=Pacer(PacingSettings.from_env(env)), blocked=self.blocked,
            hold_s=float(env.get("VIDEOCOPIES_OUTBOX_HOLD_S", "60")),
        )
        self._core = core

    async def _store_videos(self, videos: list[dict]) -> None:
        await self._core.call("POST", "/v1/inbox/videos", {"videos": videos})

    async def close(self) -> None:
        await self.receiver.close()
        await self.sender.close()

    def stats(self) -> dict[str, int]:
        """Counters core shows in /metrics and the panel."""
        figures: Counter[str] = Counter()
        figures.update({f"receiver_{k}": v for k, v in self.receiver.counts.items()})
        figures.update({f"sender_{k}": v for k, v in self.sender.counts.items()})
        figures.update({f"downloads_{k}": v for k, v in self.downloads.counts.items()})
        figures["loop_restarts"] = sum(self.restarts.values())
        figures["unreadable"] = self.receiver.counts["unreadable"]
        figures["flood_pauses"] = self.sender.pacer.pauses
        figures["stored"] = self.receiver.stored
        figures["sent"] = self.sender.sent
        figures["outbox_queued"] = self.sender.queued
        figures["downloads_waiting"] = self.downloads.waiting
        figures["scratch_bytes"] = self.downloads.scratch_bytes
        figures.update(scratch_stats(self._work))  # what the scratch directory really holds
        return {k: int(v) for k, v in figures.items()}

    async def poll_and_send(self, lapse: asyncio.Event) -> None:
        await asyncio.gather(
            supervised("receive", self.receiver.run, lapse, self.restarts),
            supervised("download", self.downloads.run, lapse, self.restarts),
            supervised("send", self.sender.run, lapse, self.restarts),
        )

    async def send(self, lapse: asyncio.Event) -> None:
        await asyncio.gather(
            supervised("download", self.downloads.run, lapse, self.restarts),
            supervised("send", self.sender.run, lapse, self.restarts),
        )


def log_acknowledgements(core: CoreClient, path: Path) -> None:
    """Append to `path`, one JSON line per call, the inbox events (update id, payment charge id)
    and outbox reports (message id) core answered 2xx for: the client's own record, to check
    after a crash of the database that nothing core acknowledged was lost. Changes nothing else."""
    call = core.call

    async def logged(method: str, where: str, body: dict[str, Any] | None = None, timeout: float = 30.0) -> Any:
        answer = await call(method, where, body, timeout)  # raises unless core took it
        if body is not None and where == "/v1/inbox":
            line = {"inbox": [e.get("update_id") for e in body["events"]],
                    "payments": [e["payment"]["charge_id"] for e in body["events"] if e.get("kind") == "payment"]}
        elif body is not None and where == "/v1/outbox/reports":
            line = {"reports": [r["id"] for r in body["reports"]]}
        else:
            return answer
        with path.open("a") as acks:
            acks.write(json.dumps(line) + "\n")
        return answer

    core.call = logged  # type: ignore[method-assign]


async def serve(env: dict[str, str]) -> int:
    core = core_client_from_env(env)
    if acks := env.get("VIDEOCOPIES_EDGE_ACKS_LOG"):
        log_acknowledgements(core, Path(acks))
    bot = bot_from_env(env)
    parts: EdgeParts | None = None
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
        parts = EdgeParts(env, bot, core, sources, work)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        bot_user = await _until_answered(stop, bot)
        if bot_user is None:
            return 0
        log.info("edge %s serving @%s", me["name"], bot_user.username)
        duty = PollingDuty(core, secrets.token_hex(16), stats=parts.stats)
        if webhook_url := env.get("VIDEOCOPIES_WEBHOOK_URL"):
            # Every edge takes pushed updates; only the duty's holder sends, keeping each chat in order.
            await asyncio.gather(
                _webhook(env, webhook_url, bot, parts.receiver, stop), duty.run(stop, parts.send)
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


async def _until_answered(stop: asyncio.Event, bot: Bot) -> Any:
    """getMe until Telegram answers (it may be away for a while); None when stopped first."""
    pause = 1.0
    while not stop.is_set():
        try:
            return await bot.get_me()
        except Exception as error:  # noqa: BLE001 - a wrong token is for the operator to see in the log
            log.warning("Telegram did not answer getMe (%r); again in %.0f s", error, pause)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), pause)
            pause = min(30.0, pause * 2)
    return None


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
