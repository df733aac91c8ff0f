"""A role's process lifecycle, apart from what it serves: its background loops under one stop
signal, and the HTTP server that stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Coroutine
from typing import Any

import uvicorn


class Background:
    """Loops that run beside a server until `stop`: each is started with the shared stop
    event, and `stop` waits for every one to finish its pass."""

    def __init__(self) -> None:
        self.stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def start(self, loop: Callable[[asyncio.Event], Coroutine[Any, Any, None]]) -> None:
        self._tasks.append(asyncio.create_task(loop(self.stopping)))

    async def stop(self) -> None:
        self.stopping.set()
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            await task


async def until_signalled(asked_before: Callable[[], bool] = lambda: False) -> None:
    """Wait for SIGTERM or SIGINT; `asked_before`: whether one came before the loop listened."""
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    if asked_before():
        return
    await stopping.wait()


class Server(uvicorn.Server):
    """`on_exit` runs at the first signal (core answers its parked claims then, so a graceful
    stop does not wait out every long poll)."""

    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None] = lambda: None) -> None:
        super().__init__(config)
        self._on_exit = on_exit

    def handle_exit(self, sig: int, frame: Any) -> None:
        self._on_exit()
        super().handle_exit(sig, frame)
        if sig == signal.SIGTERM:
            # uvicorn raises a captured signal again after shutting down; SIGTERM is how an
            # operator stops a role, and a clean stop exits 0.
            self._captured_signals.remove(sig)


def server(
    app: Any, host: str, port: int, tls: tuple[str, str] | None = None, on_exit: Callable[[], None] = lambda: None,
    **options: Any,
) -> Server:
    """`tls`: the certificate (chain) and key files to serve https with; None: plain http."""
    certfile, keyfile = tls or (None, None)
    config = uvicorn.Config(
        app, host=host, port=port, lifespan="on", log_level="warning", access_log=False, loop="none",
        ssl_certfile=certfile, ssl_keyfile=keyfile, **options,
    )
    return Server(config, on_exit)
