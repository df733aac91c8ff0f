"""The control role as a process, seen through headless Chromium: signing in, every page
loading, the plots drawn with their data points, a server added through the form, and a
screenshot of the overview saved with the test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from videocopies.embedded.postgres import LocalPostgres, free_port
from videocopies.runtime.launch import stop_process

from .browser import Chromium, chromium_or_skip, profile_dir
from .control_seed import seed
from .harness import wait_answering

PASSWORD = "operator-secret-1"


@pytest.fixture
def control(pg_server: LocalPostgres, database: str, tmp_path: Path) -> tuple[str, str]:
    import asyncio

    url = pg_server.url(database)
    asyncio.run(seed(url))
    port = free_port()
    env = {
        **os.environ, "VIDEOCOPIES_DATABASE_URL": url, "VIDEOCOPIES_CONTROL_PASSWORD": PASSWORD,
        "VIDEOCOPIES_CONTROL_PORT": str(port), "VIDEOCOPIES_CONTROL_INVENTORY": str(tmp_path / "inventory.sqlite3"),
        "VIDEOCOPIES_CORE_URL": "http://127.0.0.1:9",
    }
    process = subprocess.Popen([sys.executable, "-m", "videocopies.cli", "control"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_answering(process, f"{base}/login")
        yield base, url
    finally:
        code, err = stop_process(process)
        assert code == 0, err.decode()


def test_control_refuses_to_start_without_a_password(pg_server: LocalPostgres, database: str) -> None:
    env = {key: value for key, value in os.environ.items() if key != "VIDEOCOPIES_CONTROL_PASSWORD"}
    env["VIDEOCOPIES_DATABASE_URL"] = pg_server.url(database)
    done = subprocess.run([sys.executable, "-m", "videocopies.cli", "control"], env=env, capture_output=True,
                          timeout=60)
    assert done.returncode == 2 and b"VIDEOCOPIES_CONTROL_PASSWORD" in done.stderr


async def test_the_panel_in_a_browser(control: tuple[str, str], tmp_path: Path) -> None:
    base, _ = control
    async with Chromium(chromium_or_skip(), profile_dir(tmp_path)) as browser:
        await browser.open(f"{base}/")
        assert await browser.evaluate("location.pathname") == "/login"
        await browser.submit(
            f"document.querySelector('input[name=password]').value = {PASSWORD!r};"
            "document.getElementById('login').submit()"
        )
        assert await browser.evaluate("location.pathname") == "/"
        queue = await browser.evaluate(
            "Object.fromEntries([...document.querySelectorAll('#queue [data-state]')]"
            ".map(f => [f.dataset.state, +f.querySelector('b').textContent]))"
        )
        assert queue == {"queued": 1, "leased": 1, "lapsed": 0}
        plots = await browser.evaluate(
            "Object.fromEntries([...document.querySelectorAll('svg.plot')].map(svg => [svg.dataset.plot,"
            " [...svg.querySelectorAll('.point')].map(p => [p.dataset.series, +p.dataset.value])]))"
        )
        assert sum(value for _, value in plots["throughput"]) == 3  # three copies stored this hour
        assert {series for series, _ in plots["latency"]} == {"p50", "p95"}
        rendered = await browser.evaluate(
            "[...document.querySelectorAll('svg.plot')].map(svg => svg.getBoundingClientRect().width)"
        )
        assert len(rendered) == 2 and all(width > 300 for width in rendered)
        nodes = await browser.evaluate("[...document.querySelectorAll('#nodes tr.live td:first-child')]"
                                       ".map(td => td.textContent)")
        assert sorted(nodes) == ["edge-1", "worker-a"]
        screenshot = await browser.screenshot(tmp_path / "control-overview.png")

        await browser.open(f"{base}/leases")
        assert await browser.evaluate("document.querySelector('#leases').textContent.includes('worker-b')")
        await browser.open(f"{base}/orders")
        assert await browser.evaluate("document.querySelectorAll('#in-progress tr').length") == 1 + 2
        await browser.open(f"{base}/users/501")
        assert await browser.evaluate("document.querySelectorAll('#lots tr').length") == 1 + 2
        assert await browser.evaluate("document.querySelector('#payments').textContent.includes('tg-charge')")
        await browser.open(f"{base}/payments")
        assert "no reconciliation recorded yet" in await browser.evaluate(
            "document.querySelector('#reconciliation').textContent"
        )

        await browser.open(f"{base}/servers")
        await browser.submit(
            "const form = document.getElementById('add-server');"
            "form.host.value = 'worker-7.lan';"
            "form.querySelector('input[value=worker]').checked = true;"
            "form.submit()"
        )
        assert await browser.evaluate("location.pathname") == "/servers"
        assert await browser.evaluate("document.querySelector('tr[data-host=\"worker-7.lan\"]') !== null")
        await browser.submit("document.querySelector('tr[data-host=\"worker-7.lan\"] form').submit()")
        assert await browser.evaluate("document.querySelector('tr[data-host=\"worker-7.lan\"]') === null")
        await browser.screenshot(tmp_path / "control-servers.png")

    png = screenshot.read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 20_000, len(png)
    print(f"screenshot: {screenshot}")
