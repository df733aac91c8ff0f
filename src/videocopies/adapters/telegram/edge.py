"""Edge's Telegram I/O with aiogram: receive updates and store them in core's inbox before
the offset moves on; take core's outbox and send it, reporting each message.

Edge makes no business decision. It answers a callback query the moment it arrives (the
user's spinner stops; what the press means is core's affair), puts a user's video into
object storage so core never waits on Telegram, and honours Telegram's retry_after.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from aiogram import Bot
from aiogram.exceptions import (
    TelegramBadRequest,
    TelegramForbiddenError,
    TelegramNetworkError,
    TelegramRetryAfter,
    TelegramServerError,
)
from aiogram.methods import AnswerCallbackQuery, GetUpdates, SendMessage, TelegramMethod
from aiogram.types import (
    FSInputFile,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    LabeledPrice,
    Message,
    PreCheckoutQuery,
    Update,
)
from aiohttp import web

from videocopies.adapters.http.client import CoreClient
from videocopies.adapters.http.wire import JsonWire
from videocopies.adapters.objectstore.files import hash_file
from videocopies.application.bot.events import language_of
from videocopies.application.bot.screens import text

log = logging.getLogger(__name__)
CLOUD_DOWNLOAD_LIMIT = 20 * 1024 * 1024  # getFile refuses larger files outside a local Bot API server
ALLOWED_UPDATES = ["message", "callback_query", "pre_checkout_query"]
# Telegram waits 10 s for a pre-checkout answer; core gets most of it, the answer the rest.
PRE_CHECKOUT_ASK_S = 6.0


class SourceStore(Protocol):
    """Where a user's video goes before its update is stored in the inbox."""

    async def put_source(self, user_id: int, update_id: int, path: Path) -> tuple[str, int, str]: ...
    async def fetch(self, key: str, url: str | None, path: Path) -> None:
        """Bring a stored object (a copy to send) to a local file."""
        ...


class SignedUrlSources:
    """No storage credentials: core signs a URL for each object."""

    def __init__(self, core: CoreClient) -> None:
        self._core = core

    async def put_source(self, user_id: int, update_id: int, path: Path) -> tuple[str, int, str]:
        size, sha256 = await asyncio.to_thread(hash_file, path)
        body = {"user_id": user_id, "update_id": update_id, "size": size, "sha256": sha256}
        signed = await self._core.call("POST", "/v1/sources/upload-url", body)
        await self._core.upload(signed["url"], signed["headers"], path, size)
        return signed["key"], size, sha256

    async def fetch(self, key: str, url: str | None, path: Path) -> None:
        if url is None:
            raise RuntimeError(f"core gave no URL for {key}")
        await self._core.download(url, {}, path)


class StoreSources:
    """Edge beside core's local object store (one machine, the all-in-one role)."""

    def __init__(self, store: Any) -> None:
        self._store = store

    async def put_source(self, user_id: int, update_id: int, path: Path) -> tuple[str, int, str]:
        key = f"sources/{user_id}/{update_id}.mp4"
        size, sha256 = await self._store.put_file(key, path)
        return key, size, sha256

    async def fetch(self, key: str, url: str | None, path: Path) -> None:
        await self._store.get_file(key, path)


class LeanBotApi:
    """Bot API calls as plain JSON over kept-alive connections (`JsonWire`), for the hot paths
    (updates, text screens, callback answers): aiogram's request and response models, and a
    general HTTP client, cost several times more than the request itself, and a burst is
    thousands of them. Any answer but success goes to aiogram, which raises its usual
    exception (retry_after, blocked, ...)."""

    def __init__(self, bot: Bot, connections: int = 100) -> None:
        self._bot = bot
        parts = urlsplit(bot.session.api.api_url(bot.token, "getMe"))
        self._wire = JsonWire(f"{parts.scheme}://{parts.netloc}", connections)
        self._paths: dict[str, str] = {}

    async def close(self) -> None:
        await self._wire.close()

    async def call(self, method: type[TelegramMethod[Any]], body: dict[str, Any], timeout_s: float = 60.0) -> Any:
        name = method.__api_method__
        path = self._paths.get(name)
        if path is None:
            parts = urlsplit(self._bot.session.api.api_url(self._bot.token, name))
            path = self._paths[name] = parts.path + (f"?{parts.query}" if parts.query else "")
        try:
            status, content = await self._wire.post(path, json.dumps(body, ensure_ascii=False).encode(), timeout_s)
        except (OSError, TimeoutError) as error:
            raise TelegramNetworkError(method=method.model_construct(**body), message=repr(error)) from error
        if status == 200:
            with contextlib.suppress(ValueError, KeyError, TypeError):
                answer = json.loads(content)
                if answer["ok"] is True:
                    return answer["result"]
        called = method.model_construct(**body)
        text = content.decode(errors="replace")
        self._bot.session.check_response(self._bot, called, status, text)  # raises aiogram's error
        raise TelegramNetworkError(method=called, message=f"unexpected answer: {text[:200]}")

    async def send_text(self, chat_id: int, text: str, buttons: list[list[dict[str, str]]]) -> int:
        body: dict[str, Any] = {"chat_id": chat_id, "text": text}
        if buttons:
            body["reply_markup"] = {"inline_keyboard": [
                [{"text": b["text"], "callback_data": b["data"]} for b in row] for row in buttons
            ]}
        return int((await self.call(SendMessage, body))["message_id"])


class Receiver:
    def __init__(
        self, bot: Bot, core: CoreClient, sources: SourceStore, work_dir: Path,
        local_api: bool = False, max_video_bytes: int = 50 * 1024 * 1024, poll_timeout: int = 20,
    ) -> None:
        self._bot, self._core, self._sources, self._work_dir = bot, core, sources, work_dir
        self._download_limit = max_video_bytes if local_api else min(max_video_bytes, CLOUD_DOWNLOAD_LIMIT)
        self._poll_timeout = poll_timeout
        self._api = LeanBotApi(bot)
        self.stored = 0

    async def close(self) -> None:
        await self._api.close()

    async def run(self, stop: asyncio.Event) -> None:
        offset: int | None = None
        while not stop.is_set():
            body: dict[str, Any] = {"timeout": self._poll_timeout, "allowed_updates": ALLOWED_UPDATES}
            if offset is not None:
                body["offset"] = offset
            try:
                updates = await _until(stop, self._api.call(GetUpdates, body, timeout_s=self._poll_timeout + 30))
            except (TelegramNetworkError, TelegramServerError) as error:
                log.warning("getUpdates failed (%s); again shortly", error)
                await asyncio.sleep(1.0)
                continue
            if updates is None:
                return
            if updates:
                await self.store(updates)
                offset = updates[-1]["update_id"] + 1  # only after core has them

    async def store(self, updates: list[dict[str, Any]]) -> None:
        """Answer callbacks and pre-checkout queries at once, then store the batch; core
        retries are the client's. Updates are the Bot API's JSON: only the rare ones (a video,
        a payment) become aiogram models."""
        checkouts = [
            asyncio.ensure_future(self._pre_checkout(u["pre_checkout_query"]))
            for u in updates if u.get("pre_checkout_query")
        ]
        answers = [self._answer(u["callback_query"]["id"]) for u in updates if u.get("callback_query")]
        # Most updates become events at once; only a video waits (it is fetched and stored
        # first). A task per update would queue a page behind everything else edge is doing.
        events: list[dict[str, Any] | None] = [_event(u) for u in updates]
        videos = [i for i, e in enumerate(events) if e is not None and e["kind"] == "video"]
        if videos:
            fetched = await asyncio.gather(*(self._video_event(events[i]) for i in videos))  # type: ignore[arg-type]
            for i, event in zip(videos, fetched, strict=True):
                events[i] = event
        await asyncio.gather(*answers)
        found = [event for event in events if event is not None]
        if found:
            await self._core.call("POST", "/v1/inbox", {"events": found})
            self.stored += len(found)
        await asyncio.gather(*checkouts)

    async def _pre_checkout(self, raw: dict[str, Any]) -> None:
        """Answered now, with core's word on whether the package and price still hold; when
        core cannot say in time, the payment is declined (nothing is charged)."""
        query = PreCheckoutQuery.model_validate(raw, context={"bot": self._bot})
        body = {"user": _user(raw["from"]), "currency": query.currency, "total_amount": query.total_amount,
                "invoice_payload": query.invoice_payload}
        try:
            verdict = await asyncio.wait_for(
                self._core.call("POST", "/v1/payments/pre-checkout", body), PRE_CHECKOUT_ASK_S
            )
        except Exception as error:  # noqa: BLE001 - declining is always safe
            log.warning("pre-checkout %s not checked: %r", query.id, error)
            language = language_of(query.from_user.language_code)
            verdict = {"ok": False, "error_message": text(language, "payments_unavailable")}
        try:
            await self._bot.answer_pre_checkout_query(
                query.id, ok=bool(verdict["ok"]), error_message=verdict.get("error_message")
            )
        except TelegramBadRequest as late:
            log.info("pre-checkout %s not answered: %s", query.id, late)

    async def _answer(self, query_id: str) -> None:
        try:
            await self._api.call(AnswerCallbackQuery, {"callback_query_id": query_id})
        except TelegramBadRequest as late:
            log.info("callback %s not answered: %s", query_id, late)

    async def _video_event(self, event: dict[str, Any]) -> dict[str, Any]:
        message = Message.model_validate(event.pop("message"), context={"bot": self._bot})
        return {**event, "video": await self._video(message, event["update_id"])}

    async def _video(self, message: Message, update_id: int) -> dict[str, Any]:
        media: Any = message.video or message.document
        size = media.file_size or 0
        video = {
            "file_id": media.file_id, "size": size, "duration_s": float(getattr(media, "duration", 0) or 0),
            "width": int(getattr(media, "width", 0) or 0), "height": int(getattr(media, "height", 0) or 0),
            "mime_type": media.mime_type, "source_key": None, "sha256": None,
        }
        is_video = (media.mime_type or "").startswith("video/")
        if not is_video or size > self._download_limit:
            return video  # core tells the user why; nothing is fetched
        self._work_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self._work_dir) as scratch:
            path = Path(scratch) / "source"
            file = await self._bot.get_file(media.file_id)
            assert file.file_path is not None
            await self._bot.download_file(file.file_path, destination=path)
            key, stored, sha256 = await self._sources.put_source(message.from_user.id, update_id, path)  # type: ignore[union-attr]
        video.update(source_key=key, size=stored, sha256=sha256)
        return video


class WebhookReceiver:
    """Updates pushed by Telegram: each is answered 200 only once core has stored it, so a
    refusal or a crash makes Telegram deliver it again. The secret token is checked first."""

    def __init__(self, receiver: Receiver, bot: Bot, secret: str) -> None:
        self._receiver, self._bot, self._secret = receiver, bot, secret
        self.refused = 0

    def app(self) -> web.Application:
        app = web.Application(client_max_size=1024 * 1024)
        app.router.add_post("/telegram/webhook", self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.Response:
        presented = request.headers.get("X-Telegram-Bot-Api-Secret-Token", "")
        if not hmac.compare_digest(presented.encode(), self._secret.encode()):
            self.refused += 1
            return web.Response(status=401, text="wrong secret token")
        try:
            update = await request.json()
            Update.model_validate(update, context={"bot": self._bot})
        except ValueError:
            return web.Response(status=400, text="not an update")
        try:
            await self._receiver.store([update])
        except Exception as error:  # noqa: BLE001 - Telegram delivers it again
            log.warning("update %s not stored: %r", update["update_id"], error)
            return web.Response(status=503, text="not stored")
        return web.Response(status=200)


class Sender:
    """Sends what core's outbox holds, one chat's messages in order, chats in parallel.

    One claim loop keeps several claimed batches in flight, so sending never waits for the
    next claim's round trip; claims stay one at a time, which is what keeps a chat's later
    message out of a batch while an earlier one is still being sent.

    A few connections keep Telegram busy (it takes about 30 messages a second from a bot);
    more only lengthen the queue that edge's getUpdates waits in behind the sends."""

    def __init__(
        self, bot: Bot, core: CoreClient, sources: SourceStore, work_dir: Path,
        batch: int = 200, batches_in_flight: int = 4, hold_s: float = 60.0, connections: int = 16,
    ) -> None:
        self._bot, self._core, self._sources, self._work_dir = bot, core, sources, work_dir
        self._api = LeanBotApi(bot, connections)
        self._batch, self._in_flight, self._hold_s = batch, batches_in_flight, hold_s
        self.sent = 0

    async def close(self) -> None:
        await self._api.close()

    async def run(self, stop: asyncio.Event) -> None:
        slots = asyncio.Semaphore(self._in_flight)
        sending: set[asyncio.Task[None]] = set()
        try:
            while not stop.is_set():
                if await _until(stop, slots.acquire()) is None:
                    return
                try:
                    answer = await _until(stop, self._core.call(
                        "POST", "/v1/outbox/claim", {"limit": self._batch, "wait_s": 20, "hold_s": self._hold_s},
                        timeout=45,
                    ))
                except Exception as error:  # noqa: BLE001 - core restarting: the client retried already
                    slots.release()
                    log.warning("outbox claim failed: %r", error)
                    await asyncio.sleep(1.0)
                    continue
                if answer is None:
                    return
                task = asyncio.create_task(self._send_batch(answer["messages"], slots))
                sending.add(task)
                task.add_done_callback(sending.discard)
        finally:
            if sending:  # a claimed batch is sent and reported before edge stops
                await asyncio.gather(*sending, return_exceptions=True)

    async def _send_batch(self, messages: list[dict[str, Any]], slots: asyncio.Semaphore) -> None:
        try:
            await self.send_all(messages)
        except Exception as error:  # noqa: BLE001 - unreported messages go out again after their hold
            log.warning("a batch of %d messages was not reported: %r", len(messages), error)
        finally:
            slots.release()

    async def send_all(self, messages: list[dict[str, Any]]) -> None:
        """Send a claimed batch, then report every message of it in one call (a report lost
        with a crash means the message may be sent again, never charged twice)."""
        chats: OrderedDict[int, list[dict[str, Any]]] = OrderedDict()
        for message in messages:
            chats.setdefault(message["chat_id"], []).append(message)
        reports: list[dict[str, Any]] = []
        await asyncio.gather(*(self._send_chat(chat, reports) for chat in chats.values()))
        if reports:
            await self._core.call("POST", "/v1/outbox/reports", {"reports": reports})
            self.sent += sum(1 for r in reports if "error" not in r)

    async def _send_chat(self, messages: list[dict[str, Any]], reports: list[dict[str, Any]]) -> None:
        for message in messages:
            if not await self._send(message, reports):
                return  # the rest of this chat waits its turn; core hands them out again in order

    async def _send(self, message: dict[str, Any], reports: list[dict[str, Any]]) -> bool:
        try:
            message_id, file_id = await self._deliver(message)
        except TelegramRetryAfter as slow_down:
            await self._retry(message, float(slow_down.retry_after), f"429: {slow_down.message}")
            return False
        except (TelegramForbiddenError, TelegramBadRequest) as refused:
            # Blocked, or a message Telegram will never take: give up on it, charging nothing.
            reports.append({"id": message["id"], "error": str(refused)[:900]})
            return True
        except (TelegramNetworkError, TelegramServerError, OSError) as error:
            await self._retry(message, 2.0, str(error))
            return False
        report: dict[str, Any] = {"id": message["id"], "message_id": message_id}
        if file_id:
            report["file_id"] = file_id
        reports.append(report)
        return True

    async def _deliver(self, message: dict[str, Any]) -> tuple[int, str | None]:
        """Send one message; its Telegram message id and, for a video, the file id."""
        if invoice := message.get("invoice"):
            sent = await self._bot.send_invoice(
                message["chat_id"], title=invoice["title"], description=invoice["description"],
                payload=invoice["payload"], currency="XTR",
                prices=[LabeledPrice(label=invoice["label"], amount=invoice["stars"])],
            )
            return sent.message_id, None
        video = message.get("video")
        if not video:
            return await self._api.send_text(message["chat_id"], message["text"], message["buttons"]), None
        markup = None
        if message["buttons"]:
            markup = InlineKeyboardMarkup(inline_keyboard=[
                [InlineKeyboardButton(text=b["text"], callback_data=b["data"]) for b in row]
                for row in message["buttons"]
            ])
        self._work_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self._work_dir) as scratch:
            path = Path(scratch) / "copy.mp4"
            await self._sources.fetch(video["key"], video.get("url"), path)
            sent = await self._bot.send_video(
                message["chat_id"], FSInputFile(path, filename="copy.mp4"), caption=message["text"],
                reply_markup=markup, supports_streaming=True,
            )
        media = sent.video or sent.document
        return sent.message_id, media.file_id if media is not None else None

    async def _retry(self, message: dict[str, Any], after_s: float, error: str) -> None:
        log.info("message %s again in %.1fs: %s", message["id"], after_s, error)
        with contextlib.suppress(Exception):
            body = {"after_s": after_s, "error": error[:900]}
            await self._core.call("POST", f"/v1/outbox/{message['id']}/retry", body)


def _event(update: dict[str, Any]) -> dict[str, Any] | None:
    """The inbox event an update makes (None: nothing core acts on). A video's event still
    carries its message: edge fetches and stores the file before the event is stored."""
    update_id = update["update_id"]
    if (query := update.get("callback_query")) is not None:
        if not query.get("data"):
            return None
        return {"update_id": update_id, "user": _user(query["from"]), "kind": "button", "data": query["data"]}
    message = update.get("message")
    if message is None or message.get("from") is None:
        return None
    user = _user(message["from"])
    if (paid := message.get("successful_payment")) is not None:
        payment = {"charge_id": paid["telegram_payment_charge_id"], "total_amount": paid["total_amount"],
                   "currency": paid["currency"], "invoice_payload": paid["invoice_payload"]}
        return {"update_id": update_id, "user": user, "kind": "payment", "payment": payment}
    if message.get("video") or message.get("document"):
        return {"update_id": update_id, "user": user, "kind": "video", "message": message}
    return {"update_id": update_id, "user": user, "kind": "text", "text": (message.get("text") or "")[:4096]}


def _user(user: dict[str, Any]) -> dict[str, Any]:
    return {"id": user["id"], "language_code": user.get("language_code"),
            "first_name": (user.get("first_name") or "")[:256]}


async def _until(stop: asyncio.Event, work: Any) -> Any:
    """The result of `work`, or None when `stop` is set first (the work is cancelled)."""
    task = asyncio.ensure_future(work)
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    if not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        return None
    return task.result()
