"""The control panel lists the updates the bot could not read, as a page and as JSON, only
to a signed-in operator."""

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from videocopies.adapters.http.control.app import ControlServices, create_app
from videocopies.adapters.http.control.sessions import PanelSessions
from videocopies.adapters.memory import ManualClock
from videocopies.adapters.memory.control import InMemoryControlReadModel
from videocopies.adapters.memory.inventory import InMemoryServerInventory
from videocopies.application.control import UnreadableView

NOW = datetime(2026, 5, 1, 10, 30, 5, tzinfo=UTC)
PASSWORD = "correct horse battery"


@pytest.fixture
async def panel() -> AsyncIterator[httpx.AsyncClient]:
    clock = ManualClock(NOW)
    model = InMemoryControlReadModel(unreadable_views=[
        UnreadableView(NOW - timedelta(minutes=5), 41, 77, "data: String should match pattern '^[^\\x00]*$'"),
        UnreadableView(NOW - timedelta(seconds=30), 42, None, "user: Field required"),
        UnreadableView(NOW - timedelta(seconds=10), 43, 78, "<script>alert(1)</script>"),
    ])
    services = ControlServices(model, InMemoryServerInventory(), PanelSessions(PASSWORD, clock), clock,
                               login_delay_s=0.0)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(services)),
                                 base_url="http://panel.test") as client:
        yield client


async def test_unreadable_updates_are_listed_newest_first(panel: httpx.AsyncClient) -> None:
    for path in ("/unreadable", "/unreadable.json"):
        assert (await panel.get(path)).status_code == 303  # sign in first
    await panel.post("/login", data={"password": PASSWORD})
    html = (await panel.get("/unreadable")).text
    assert html.index(">43<") < html.index(">42<") < html.index(">41<")
    assert '<a href="/users/77">77</a>' in html and "user: Field required" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    listed = (await panel.get("/unreadable.json")).json()["unreadable"]
    assert [row["update_id"] for row in listed] == [43, 42, 41]
    assert listed[1] == {"at": (NOW - timedelta(seconds=30)).isoformat(), "update_id": 42, "user_id": None,
                         "reason": "user: Field required"}
