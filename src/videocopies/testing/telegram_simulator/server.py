"""Run the simulator with uvicorn: in a background thread (sync `with`), as a task on the caller's
loop (`async with`), or in the foreground (`serve_forever`, used by `python -m`)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import uvicorn
import uvloop

from videocopies.testing.telegram_simulator.app import create_app
from videocopies.testing.telegram_simulator.fastpath import protocol_for
from videocopies.testing.telegram_simulator.settings import Settings
from videocopies.testing.telegram_simulator.state import SimulatorState
from videocopies.testing.telegram_simulator.users import SimulatedUser, create_user

if TYPE_CHECKING:  # aiogram costs seconds to import: the simulator process never needs it
    from aiogram.client.telegram import TelegramAPIServer


class BotApiSimulator:
    """A Telegram Bot API stand-in listening on `url`; `port=0` picks a free port."""

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, mode: str = "cloud", *, files_dir: Path | None = None,
        **settings,
    ) -> None:
        self.state = SimulatorState(Settings(mode=mode, **settings), files_dir=files_dir)
        self.app = create_app(self.state)
        self._socket = socket.create_server((host, port))
        self.host, self.port = host, self._socket.getsockname()[1]
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._task: asyncio.Task | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def api_server(self) -> TelegramAPIServer:
        """What to give aiogram's `AiohttpSession(api=...)` so a `Bot` talks to this simulator."""
        from aiogram.client.telegram import TelegramAPIServer

        return TelegramAPIServer.from_base(self.url, is_local=self.state.local)

    def create_bot(self, token: str | None = None, *, username: str | None = None) -> str:
        return self.state.create_bot(token, username=username).token

    def create_user(self, bot_token: str | None = None, **profile) -> SimulatedUser:
        bot = self.state.bots[bot_token] if bot_token else None
        return create_user(self.state, bot, **profile)

    def user(self, user_id: int) -> SimulatedUser:
        return SimulatedUser(self.state, user_id)

    # -- lifecycle ----------------------------------------------------------------------------

    def _uvicorn(self) -> uvicorn.Server:
        config = uvicorn.Config(
            self.app, log_config=None, access_log=False, lifespan="on", timeout_graceful_shutdown=1,
            ws="none", http=protocol_for(self.state),
        )
        self._server = uvicorn.Server(config)
        return self._server

    def start(self) -> BotApiSimulator:
        server = self._uvicorn()
        self._thread = threading.Thread(
            target=lambda: asyncio.run(server.serve(sockets=[self._socket])), name="bot-api-simulator", daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the Bot API simulator did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        self._socket.close()
        self.state.close()

    def __enter__(self) -> BotApiSimulator:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    async def __aenter__(self) -> BotApiSimulator:
        server = self._uvicorn()
        self._task = asyncio.get_running_loop().create_task(server.serve(sockets=[self._socket]))
        while not server.started:
            if self._task.done():
                self._task.result()
                raise RuntimeError("the Bot API simulator did not start")
            await asyncio.sleep(0.01)
        return self

    async def __aexit__(self, *exc_info) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._task is not None:
            await self._task
            self._task = None
        self._socket.close()
        self.state.close()

    def serve_forever(self) -> None:
        uvloop.run(self._uvicorn().serve(sockets=[self._socket]))


__all__ = ["BotApiSimulator"]
