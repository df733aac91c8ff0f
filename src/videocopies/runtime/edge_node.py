"""What one edge process runs: the receiver, the downloads and the sender (supervised, restarted
when one fails), what they count, the webhook server when Telegram pushes updates, and a wait
for Telegram to answer at all."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import Counter
from pathlib import Path
from typing import Any

from aiogram import Bot
from aiohttp import web

from videocopies.adapters.http.client import CoreClient
from videocopies.adapters.probe.source import inspect_source
from videocopies.adapters.scratch import scratch_stats
from videocopies.adapters.telegram.edge import (
    ALLOWED_UPDATES,
    BlockedChats,
    Downloads,
    Pacer,
    Receiver,
    Sender,
    SourceStore,
    WebhookReceiver,
    supervised,
)
from videocopies.settings.edge import EdgeSettings, Webhook

log = logging.getLogger("videocopies.edge")


class EdgeParts:
    """The receiver, the downloads and the sender of one edge, and what they count."""

    def __init__(self, settings: EdgeSettings, bot: Bot, core: CoreClient, sources: SourceStore, work: Path) -> None:
        limits = settings.limits
        self.blocked = BlockedChats()
        self._work = work
        self.restarts: Counter[str] = Counter()
        self.downloads = Downloads(
            bot, sources, work / "in", self._store_videos, download_limit=limits.max_bytes,
            inspect=lambda path: inspect_source(path, limits), budget_bytes=settings.scratch_bytes,
        )
        self.receiver = Receiver(bot, core, self.downloads, blocked=self.blocked, download_limit=limits.max_bytes)
        self.sender = Sender(
            bot, core, sources, work / "out", pacer=Pacer(settings.pacing), blocked=self.blocked,
            hold_s=settings.outbox_hold_s,
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

    core.call = logged  # type: ignore[method-assign,assignment]


async def until_answered(stop: asyncio.Event, bot: Bot) -> Any:
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


async def serve_webhook(webhook: Webhook, bot: Bot, receiver: Receiver, stop: asyncio.Event) -> None:
    """Telegram posts updates to this process (path /telegram/webhook) until `stop`."""
    runner = web.AppRunner(WebhookReceiver(receiver, bot, webhook.secret).app())
    await runner.setup()
    await web.TCPSite(runner, webhook.host, webhook.port).start()
    try:
        await bot.set_webhook(webhook.url, secret_token=webhook.secret, allowed_updates=ALLOWED_UPDATES)
        await stop.wait()
    finally:
        await runner.cleanup()
