"""No secret shows where an operator or a scraper looks: core, edge, a worker and control run as
processes with the Bot API simulator, an order is made end to end (and a few things go wrong
on the way), then every process's stdout and stderr, core's /metrics and /_info (with and
without a token), and every panel page reachable from its navigation are searched for the bot
token, the database password, the node tokens, the quote secret and the panel's password."""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, urljoin, urlsplit

import httpx
import pytest

from integration.harness import stopped_if_left, wait_answering
from videocopies.adapters.ffmpeg.clips import make_clip
from videocopies.embedded.postgres import LocalPostgres, free_port
from videocopies.runtime.launch import CoreProcess, edge_process, issue_token, stop_process, worker_process
from videocopies.testing.telegram_simulator import BotApiSimulator, SimulatedUser

QUOTE_SECRET = secrets.token_urlsafe(32)
PANEL_PASSWORD = f"panel-{secrets.token_urlsafe(12)}"
DB_PASSWORD = f"db-{secrets.token_urlsafe(12)}"


def _with_password(url: str) -> str:
    """The database URL as an operator writes it, with a password (the test server trusts
    127.0.0.1, so it is never asked for: what matters is where the URL travels)."""
    scheme, rest = url.split("://", 1)
    user, host = rest.split("@", 1)
    return f"{scheme}://{user}:{DB_PASSWORD}@{host}"


def _control(url: str, core_url: str, home: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Control started (not yet answering) and its address."""
    port = free_port()
    env = {**os.environ, "VIDEOCOPIES_DATABASE_URL": url, "VIDEOCOPIES_CONTROL_PASSWORD": PANEL_PASSWORD,
           "VIDEOCOPIES_CONTROL_PORT": str(port), "VIDEOCOPIES_CONTROL_INVENTORY": str(home / "inventory.sqlite3"),
           "VIDEOCOPIES_CORE_URL": core_url}
    process = subprocess.Popen([sys.executable, "-m", "videocopies.cli", "control"], env=env, stderr=subprocess.PIPE)
    return process, f"http://127.0.0.1:{port}"


async def _order_end_to_end(user: SimulatedUser, clip: Path) -> None:
    user.send_text("/start")
    await user.next_message(contains="50 coins", timeout=60)
    user.send_text("/balance")
    await user.next_message(contains="Available", timeout=30)
    user.press_raw("c:forged:1:5:AAAA.AAAAAAAAAAAAAAAA")  # a forged confirm button
    await user.next_message(contains="no longer valid", timeout=30)
    user.send_video(clip.read_bytes(), width=360, height=640, duration=2)
    choose = await user.next_message(contains="How many copies", timeout=60)
    user.press(choose.message["message_id"], next(d for d in choose.buttons if d.split(":")[1] == "1"))
    quote_screen = await user.next_message(contains="The price holds", timeout=30)
    (confirm,) = [b["callback_data"] for row in quote_screen.message["reply_markup"]["inline_keyboard"] for b in row
                  if b["callback_data"].startswith("c:")]
    user.press(quote_screen.message["message_id"], confirm)
    await user.next_message(contains="Order accepted", timeout=30)
    await user.next_message(media="video", timeout=180)


def _panel_pages(base: str, user_id: int) -> dict[str, str]:
    """Sign in (once wrongly), then every page linked from the panel, and the pages they link to."""
    pages: dict[str, str] = {}
    with httpx.Client(base_url=base, timeout=30) as panel:
        assert panel.post("/login", data={"password": "not-the-password"}).status_code == 401
        assert panel.post("/login", data={"password": PANEL_PASSWORD}).status_code == 303
        waiting = ["/", f"/users/{user_id}", "/unreadable.json"]
        while waiting and len(pages) < 60:
            path = waiting.pop(0)
            if path in pages:
                continue
            answer = panel.get(path)
            assert answer.status_code == 200, (path, answer.status_code)
            pages[path] = answer.text
            for link in re.findall(r'href="([^"#]+)"', answer.text):
                target = urlsplit(urljoin(base + path, link))
                if target.netloc == urlsplit(base).netloc and target.path not in pages:
                    waiting.append(target.path + (f"?{target.query}" if target.query else ""))
    assert {"/", "/leases", "/orders", "/users", "/payments", "/unreadable", "/servers"} <= pages.keys()
    return pages


def _core_views(core_url: str, control_token: str, edge_token: str) -> dict[str, str]:
    views = {}
    for path in ("/metrics", "/_info"):
        views[path] = httpx.get(f"{core_url}{path}", timeout=10).text
        views[f"{path} with a token"] = httpx.get(f"{core_url}{path}", timeout=10,
                                                  headers={"Authorization": f"Bearer {control_token}"}).text
    # A token used where its role may not go, and a near miss: what core says, and logs, about each.
    views["refused role"] = httpx.post(f"{core_url}/v1/jobs/claim", json={"limit": 1}, timeout=10,
                                       headers={"Authorization": f"Bearer {edge_token}"}).text
    views["wrong secret"] = httpx.post(f"{core_url}/v1/jobs/claim", json={"limit": 1}, timeout=10,
                                       headers={"Authorization": f"Bearer {edge_token}x"}).text
    return views


def _leaks(secret_values: dict[str, str], seen: dict[str, str]) -> list[str]:
    found = []
    for where, text in seen.items():
        for name, value in secret_values.items():
            for form in {value, quote(value, safe="")}:
                if form in text:
                    found.append(f"{name} in {where}")
    return found


def test_no_secret_in_any_log_metric_or_panel_page(
    pg_server: LocalPostgres, database: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    url = _with_password(pg_server.url(database))
    clip = make_clip(tmp_path / "clip.mp4", seconds=2)
    store = tmp_path / "objects"
    edge_token, worker_token = issue_token(url, "edge-1", "edge"), issue_token(url, "worker-1")
    control_token = issue_token(url, "control-1", "control")
    logs: dict[str, str] = {}
    # One Bot API call in ten answered 502: edge's retries and their reports are in its log too.
    with BotApiSimulator(fault_rate=0.1) as sim:
        bot_token = sim.create_bot()
        core = CoreProcess(url, quote_secret=QUOTE_SECRET, log_path=tmp_path / "core.log")
        # Edge, the worker and control start beside core: their imports take seconds, and they
        # retry core until core answers.
        edge = edge_process(core.url, edge_token, bot_token, sim.url, tmp_path / "edge", store)
        worker = worker_process(core.url, worker_token, tmp_path / "work", store)
        control, panel = _control(url, core.url, tmp_path / "control")
        with stopped_if_left(edge), stopped_if_left(worker), stopped_if_left(control), core:
            try:
                wait_answering(control, f"{panel}/login")
                user = sim.create_user(bot_token, language_code="en")
                asyncio.run(_order_end_to_end(user, clip))
                core.restart()  # edge and the worker lose core for a moment, and say so
                user.send_text("/balance")
                asyncio.run(user.next_message(contains="Available", timeout=120))
                seen = _core_views(core.url, control_token, edge_token) | {
                    f"panel {path}": text for path, text in _panel_pages(panel, user.id).items()
                }
            finally:
                for name, process in (("edge", edge), ("worker", worker), ("control", control)):
                    code, err = stop_process(process)
                    logs[f"{name}'s stderr"] = err.decode(errors="replace")
                    assert code == 0, logs[f"{name}'s stderr"][-3000:]
    logs["core's output"] = (tmp_path / "core.log").read_text(errors="replace") + core.log.decode(errors="replace")
    captured = capfd.readouterr()  # what edge, the worker and control wrote to the stdout they inherited
    logs["the roles' stdout"] = captured.out + captured.err
    secret_values = {
        "the bot token": bot_token, "the bot token's secret": bot_token.split(":", 1)[1],
        "the database password": DB_PASSWORD, "the quote secret": QUOTE_SECRET, "the panel's password": PANEL_PASSWORD,
        **{f"{name}'s token": token.split(".", 1)[1] for name, token in
           (("edge", edge_token), ("worker", worker_token), ("control", control_token))},
    }

    assert _leaks(secret_values, logs | seen) == []
    assert any(path.endswith(f"/users/{user.id}") and "id=\"lots\"" in text for path, text in seen.items())
