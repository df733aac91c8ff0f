"""Benchmark: the client's CPU per JSON request, our HTTP/1.1 client (`JsonWire`, edge's and
every node's) against aiohttp's ClientSession held to the same job (`AiohttpJsonWire` below:
the same interface, errors and keep-alive), the evidence of docs/decisions/0005.

A uvicorn server in another process answers every POST with a small JSON body; the client
process sends `--requests` POSTs from `--concurrency` tasks over kept-alive connections and
reads its own CPU seconds (time.process_time), so the server's work is not counted. Both
clients run in the same process, alternating, `--rounds` times each, for small bodies and for
bodies the size of an inbox page. Prints one JSON line: microseconds of client CPU per
request, the median of each client, and aiohttp's ratio to ours.

    uv run python bench/http_client_cpu.py [--requests 5000] [--concurrency 32] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import aiohttp
import uvloop

from videocopies.adapters.http import wire

ANSWER = json.dumps({"ok": True, "result": {"message_id": 1, "chat": {"id": 1}, "text": "x" * 100}}).encode()


class AiohttpJsonWire:
    """`JsonWire` on aiohttp, as it was tried for issue 19: the semaphore keeps a request's wait
    for a connection out of its timeout, a connection the server dropped is retried once."""

    def __init__(self, base_url: str, connections: int = 100) -> None:
        self._prefix = base_url.rstrip("/")
        self._connections = connections
        self._slots = asyncio.Semaphore(connections)
        self._session: aiohttp.ClientSession | None = None

    async def post(self, path: str, body: bytes, timeout_s: float) -> tuple[int, bytes]:
        session = self._session or self._open()
        async with self._slots:
            try:
                async with asyncio.timeout(timeout_s):
                    for last in (False, True):
                        try:
                            async with session.post(self._prefix + path, data=body, headers=_JSON) as answer:
                                return answer.status, await answer.read()
                        except aiohttp.ServerDisconnectedError as error:
                            if last:
                                raise wire.WireError(f"connection closed: {error}") from error
            except aiohttp.ClientError as error:
                raise wire.WireError(repr(error)) from error
        raise AssertionError("unreachable")

    def _open(self) -> aiohttp.ClientSession:
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self._connections, keepalive_timeout=wire.IDLE_S),
            cookie_jar=aiohttp.DummyCookieJar(), timeout=aiohttp.ClientTimeout(total=None), auto_decompress=False,
            skip_auto_headers=("Accept-Encoding", "User-Agent"),
        )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


_JSON = {"Content-Type": "application/json"}


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(ANSWER)).encode())]})
    await send({"type": "http.response.body", "body": ANSWER})


def _serve(port: int) -> None:
    import uvicorn

    uvicorn.run(_app, host="127.0.0.1", port=port, log_level="warning", http="httptools", loop="uvloop",
                timeout_keep_alive=30)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _round(client: Callable[..., Any], url: str, body: bytes, requests: int, concurrency: int) -> float:
    """Client CPU microseconds per request for one round."""
    http = client(url, connections=concurrency)
    await http.post("/warm", body, 10)
    left = requests

    async def sender() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            status, _ = await http.post("/bot1:x/sendMessage", body, 10)
            assert status == 200

    started = time.process_time()
    await asyncio.gather(*(sender() for _ in range(concurrency)))
    spent = time.process_time() - started
    await http.close()
    return spent / requests * 1e6


async def _measure(url: str, args: argparse.Namespace) -> dict[str, Any]:
    clients = {"hand_written": wire.JsonWire, "aiohttp": AiohttpJsonWire}
    bodies = {
        "small": json.dumps({"chat_id": 1, "text": "y" * 200}).encode(),
        "inbox_page": json.dumps({"updates": [{"update_id": n, "text": "z" * 200} for n in range(80)]}).encode(),
    }
    figures: dict[str, Any] = {}
    for kind, body in bodies.items():
        samples: dict[str, list[float]] = {name: [] for name in clients}
        for _ in range(args.rounds):
            for name, client in clients.items():
                samples[name].append(await _round(client, url, body, args.requests, args.concurrency))
        medians = {name: statistics.median(values) for name, values in samples.items()}
        figures[kind] = {
            "body_bytes": len(body),
            **{f"{name}_cpu_us_per_request": [round(v, 1) for v in values] for name, values in samples.items()},
            **{f"median_{name}_cpu_us": round(v, 1) for name, v in medians.items()},
            "aiohttp_ratio": round(medians["aiohttp"] / medians["hand_written"], 3),
        }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve(args.serve)
        return
    port = _free_port()
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)])
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.1)
        figures = uvloop.run(_measure(url, args))
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(json.dumps({"bench": "http_client_cpu", "requests": args.requests, "concurrency": args.concurrency,
                      **figures}), flush=True)


if __name__ == "__main__":
    main()
