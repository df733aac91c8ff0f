"""Debian's headless Chromium driven over the DevTools protocol (a WebSocket), with no
driver and no package beyond aiohttp: open a page, read its DOM, submit its forms, take a
screenshot."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest


def chromium_or_skip() -> str:
    """Chromium's path. Missing, it fails the test where setup-system.sh could have installed
    it (as root), and skips with the reason only where it could not."""
    path = shutil.which("chromium")
    if path is None:
        if os.geteuid() == 0:
            pytest.fail("chromium is missing: run scripts/setup-system.sh (it installs Debian's chromium)")
        pytest.skip("chromium is not installed and this user cannot install it (setup-system.sh needs root)")
    return path


class Chromium:
    def __init__(self, binary: str, profile: Path, width: int = 1280, height: int = 1500) -> None:
        self._binary, self._profile, self._size = binary, profile, (width, height)
        self._process: subprocess.Popen[bytes] | None = None
        self._session: aiohttp.ClientSession | None = None
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._next_id = 0
        self._events: list[dict[str, Any]] = []

    async def __aenter__(self) -> Chromium:
        self._process = subprocess.Popen(
            [self._binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-extensions", "--disable-background-networking", "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=0", f"--user-data-dir={self._profile}",
             f"--window-size={self._size[0]},{self._size[1]}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        port_file = self._profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip()):
            assert self._process.poll() is None, "chromium exited at start"
            assert time.monotonic() < deadline, "chromium did not open its DevTools port"
            await asyncio.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        self._session = aiohttp.ClientSession()
        async with self._session.get(f"http://127.0.0.1:{port}/json/list") as listed:
            targets = json.loads(await listed.text())
        page = next(t for t in targets if t["type"] == "page")
        self._ws = await self._session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=64 * 1024 * 1024)
        await self.call("Page.enable")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._session is not None:
            await self._session.close()
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        assert self._ws is not None
        self._next_id += 1
        ask = self._next_id
        await self._ws.send_json({"id": ask, "method": method, "params": params})
        while True:
            message = await self._receive()
            if message.get("id") == ask:
                assert "error" not in message, f"{method}: {message['error']}"
                return message["result"]  # type: ignore[no-any-return]
            self._events.append(message)

    async def _receive(self, timeout: float = 30.0) -> dict[str, Any]:
        assert self._ws is not None
        return json.loads((await self._ws.receive(timeout=timeout)).data)  # type: ignore[no-any-return]

    async def _loaded(self) -> None:
        deadline = time.monotonic() + 30
        while True:
            if any(event.get("method") == "Page.loadEventFired" for event in self._events):
                self._events.clear()
                return
            self._events.append(await self._receive(max(deadline - time.monotonic(), 0.1)))

    async def open(self, url: str) -> None:
        self._events.clear()
        await self.call("Page.navigate", url=url)
        await self._loaded()

    async def evaluate(self, expression: str) -> Any:
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    async def submit(self, script: str) -> None:
        """Run a script that submits a form, and wait for the page the POST leads to."""
        self._events.clear()
        await self.evaluate(script)
        await self._loaded()

    async def screenshot(self, path: Path) -> Path:
        shot = await self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path


def profile_dir(parent: Path) -> Path:
    return Path(tempfile.mkdtemp(prefix="chromium-", dir=parent))
