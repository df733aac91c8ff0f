"""The simulator as an ASGI app: the Bot API under /bot{token}/, file downloads, webhook delivery,
and the /_sim control endpoints that drive simulated users from another process."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Coroutine

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from videocopies.testing.telegram_simulator import methods, params
from videocopies.testing.telegram_simulator.accounts import BotAccount, Update, Webhook
from videocopies.testing.telegram_simulator.control import control_routes
from videocopies.testing.telegram_simulator.errors import BotApiError
from videocopies.testing.telegram_simulator.fastpath import BAD_GATEWAY_BODY, SLOW_CALL, bot_call, json_body
from videocopies.testing.telegram_simulator.state import BAD_GATEWAY, SLOW, SimulatorState

log = logging.getLogger(__name__)
_STOP = object()


class WebhookPumps:
    """One delivery task per bot with a webhook: POSTs pending updates one at a time, in order,
    retrying each until the receiver answers 2xx."""

    def __init__(self, state: SimulatorState) -> None:
        self.state = state
        self.tasks: dict[str, asyncio.Task] = {}
        self.client: httpx.AsyncClient | None = None

    def ensure(self, bot: BotAccount) -> None:
        task = self.tasks.get(bot.token)
        if bot.webhook is not None and (task is None or task.done()):
            self.tasks[bot.token] = asyncio.get_running_loop().create_task(self._pump(bot))

    async def close(self) -> None:
        for task in self.tasks.values():
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)
        if self.client is not None:
            await self.client.aclose()

    async def _pump(self, bot: BotAccount) -> None:
        if self.client is None:
            self.client = httpx.AsyncClient()

        def next_delivery() -> tuple[Webhook, Update] | object | None:
            with self.state.lock:
                if bot.webhook is None:
                    return _STOP
                return (bot.webhook, bot.pending[0]) if bot.pending else None

        while True:
            item = await bot.updates_changed.wait_for(next_delivery, 30.0)
            if item is _STOP:
                return
            if item is None:
                continue
            hook, update = item
            headers = {"X-Telegram-Bot-Api-Secret-Token": hook.secret_token} if hook.secret_token else {}
            try:
                response = await self.client.post(hook.url, json=update.to_json(), headers=headers, timeout=10.0)
                error = None if response.is_success else f"Wrong response from the webhook: {response.status_code}"
            except httpx.HTTPError as e:
                error = f"Connection failed: {type(e).__name__}"
            with self.state.lock:
                if error is None:
                    bot.pending = [u for u in bot.pending if u.update_id != update.update_id]
                else:
                    hook.last_error, hook.last_error_date = error, int(self.state.clock())
            if error is not None:
                log.debug("webhook delivery of update %s failed: %s", update.update_id, error)
                await asyncio.sleep(self.state.settings.webhook_retry_delay)


async def _unless_disconnected(receive: Receive, call: Coroutine) -> object:
    """Run a long poll, but give up when its client goes away (as aiogram does when polling stops),
    so the poll does not hold the server's shutdown."""

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    # Raced here rather than with edge's helper: Telegram's stand-in shares no code with what it tests.
    poll, gone = asyncio.ensure_future(call), asyncio.ensure_future(disconnected())
    try:
        await asyncio.wait({poll, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (poll, gone):
            task.cancel()
        await asyncio.gather(poll, gone, return_exceptions=True)
    if poll.cancelled():
        return []  # nobody is listening; the updates stay pending for the next poll
    return poll.result()


async def _reply(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _bot_call(scope: Scope) -> tuple[str, str] | None:
    """(token, method) for a Bot API request, `/bot{token}/{method}`; None for any other."""
    if scope["type"] != "http" or scope["method"] not in ("GET", "POST"):
        return None
    return bot_call(scope["path"])


def create_app(state: SimulatorState) -> ASGIApp:
    """The Bot API is served by a bare ASGI function rather than through Starlette's routing,
    request and response objects: a load run sends tens of thousands of small calls, and that
    layer cost more CPU than the method itself, CPU the measured system shares with the
    simulator. Everything else (downloads, the control endpoints, lifespan) is Starlette's."""
    pumps = WebhookPumps(state)

    async def bot_api(scope: Scope, receive: Receive, send: Send, token: str, method: str) -> None:
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        waits = method.lower() == "getupdates"
        # The fast path drew this call's fault already when it handed a slow one over.
        fault = SLOW if scope.get(SLOW_CALL) else state.draw_fault(may_wait=not waits)
        if fault == BAD_GATEWAY:
            await _reply(send, 502, BAD_GATEWAY_BODY)
            return
        if fault == SLOW:
            await asyncio.sleep(state.settings.slow_s)
        content_type = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"content-type"), "")
        try:
            p = params.parse(scope["query_string"].decode("latin-1"), content_type, b"".join(chunks))
            if waits:
                result = await _unless_disconnected(receive, methods.call(state, token, method, p))
            else:
                result = await methods.call(state, token, method, p)
        except BotApiError as e:
            await _reply(send, e.error_code, json_body(e.to_json()))
            return
        if method.lower() in ("setwebhook", "deletewebhook"):
            pumps.ensure(state.bots[token])
        await _reply(send, 200, json_body({"ok": True, "result": result}))

    async def download(request: Request) -> Response:
        fault = state.draw_fault()
        if fault == BAD_GATEWAY:
            return Response(BAD_GATEWAY_BODY, status_code=502, media_type="application/json")
        if fault == SLOW:
            await asyncio.sleep(state.settings.slow_s)
        with state.lock:
            known = request.path_params["token"] in state.bots
            stored = state.files.by_path(request.path_params["path"])
        if not known:
            return JSONResponse(BotApiError(401, "Unauthorized").to_json(), status_code=401)
        if stored is None or state.local:
            return JSONResponse(BotApiError(404, "Not Found").to_json(), status_code=404)
        return FileResponse(stored.blob, media_type=stored.mime_type or "application/octet-stream")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        with state.lock:
            bots = list(state.bots.values())
        for bot in bots:
            pumps.ensure(bot)
        try:
            yield
        finally:
            await pumps.close()

    rest = Starlette(
        routes=[
            Route("/file/bot{token}/{path:path}", download, methods=["GET"]),
            Mount("/_sim", routes=control_routes(state)),
        ],
        lifespan=lifespan,
    )
    rest.state.simulator = state

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if (call := _bot_call(scope)) is not None:
            await bot_api(scope, receive, send, *call)
        else:
            await rest(scope, receive, send)

    return app
