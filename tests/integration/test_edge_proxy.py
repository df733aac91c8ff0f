"""Edge reaches the Bot API through the proxy VIDEOCOPIES_TELEGRAM_PROXY names: a small
CONNECT proxy of the test's own carries every call and counts the tunnels it opened."""

from __future__ import annotations

import asyncio
import contextlib

from aiogram.methods import GetUpdates

from videocopies.adapters.telegram.botapi import LeanBotApi
from videocopies.roles.edge import bot_from_env
from videocopies.testing.telegram_simulator import BotApiSimulator


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()


async def test_bot_api_calls_go_through_the_configured_proxy() -> None:
    tunnels: list[str] = []

    async def tunnel(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        method, target, _ = (await reader.readline()).decode().split(" ", 2)
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        if method != "CONNECT":
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
            writer.close()
            return
        host, port = target.rsplit(":", 1)
        upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
        tunnels.append(target)
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))

    proxy = await asyncio.start_server(tunnel, "127.0.0.1", 0)
    port = proxy.sockets[0].getsockname()[1]
    try:
        async with BotApiSimulator(fault_rate=0.0, slow_rate=0.0) as sim:  # faults are not what this test is about
            token = sim.create_bot(username="proxied_bot")
            bot = bot_from_env({"VIDEOCOPIES_BOT_TOKEN": token, "VIDEOCOPIES_TELEGRAM_URL": sim.url,
                                "VIDEOCOPIES_TELEGRAM_PROXY": f"http://127.0.0.1:{port}"})
            lean = LeanBotApi(bot)
            try:
                me = await bot.get_me()
                user = sim.create_user(token)
                user.send_text("/start")
                updates = await lean.call(GetUpdates, {"timeout": 1})  # the hot path goes through it too
                await lean.send_text(user.id, "hello", [[{"text": "ok", "data": "ok"}]])
            finally:
                await lean.close()
                await bot.session.close()
    finally:
        proxy.close()
    assert me.username == "proxied_bot"
    assert tunnels and set(tunnels) == {f"127.0.0.1:{sim.port}"}
    assert updates[0]["message"]["text"] == "/start"
    assert user.received[-1].text == "hello"
