"""The control panel over in-memory adapters: nothing without the password, forms only with
the session's CSRF token and from the panel's own origin, and pages that show what the read
model holds."""

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from videocopies.adapters.http.control.app import ControlServices, create_app
from videocopies.adapters.http.control.sessions import COOKIE, PanelSessions
from videocopies.adapters.memory import ManualClock
from videocopies.adapters.memory.control import InMemoryControlReadModel
from videocopies.adapters.memory.inventory import InMemoryServerInventory
from videocopies.application.control import (
    LeaseView,
    Ledger,
    LotView,
    MinuteCount,
    MinuteLatency,
    NodeView,
    OrderView,
    PaymentView,
    QueueDepth,
    ReservationView,
)

NOW = datetime(2026, 5, 1, 10, 30, 5, tzinfo=UTC)
PASSWORD = "correct horse battery"
BASE = "http://panel.test"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(NOW)


@pytest.fixture
def model() -> InMemoryControlReadModel:
    minute = NOW.replace(second=0)
    return InMemoryControlReadModel(
        depth=QueueDepth(4, 2, 1, 3, 1.5, 6, 0.5, 9),
        node_views=[NodeView("worker-a", "worker", NOW - timedelta(days=1), None, NOW - timedelta(seconds=12)),
                    NodeView("edge-old", "edge", NOW - timedelta(days=9), NOW - timedelta(days=2), None)],
        lease_views=[LeaseView("job-1", "ord-1", 77, "worker-a", "AbC123", NOW - timedelta(seconds=40),
                               NOW - timedelta(seconds=30), NOW + timedelta(seconds=20), 1, 3, 5, 2, False)],
        order_views=[OrderView("ord-1", 77, 5, 20, "running", NOW - timedelta(seconds=40), 2)],
        ledgers={77: Ledger(77, (LotView("lot-1", "start", 50, NOW, None, 30, 8, 0),),
                            (ReservationView("ord-1", 20, 8, 0, True, ()),))},
        payment_views=[PaymentView("tg-charge-1", 77, 220, 100, "XTR", NOW - timedelta(minutes=3))],
        copies=[MinuteCount(minute, 4), MinuteCount(minute - timedelta(minutes=5), 2)],
        latency=[MinuteLatency(minute, 2.0, 6.5, 3)],
    )


@pytest.fixture
async def panel(model: InMemoryControlReadModel, clock: ManualClock) -> AsyncIterator[httpx.AsyncClient]:
    services = ControlServices(model, InMemoryServerInventory(), PanelSessions(PASSWORD, clock), clock,
                               core_url="http://core.test", login_delay_s=0.0)
    transport = httpx.ASGITransport(app=create_app(services))
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
        yield client


async def _sign_in(panel: httpx.AsyncClient) -> str:
    signed = await panel.post("/login", data={"password": PASSWORD})
    assert signed.status_code == 303 and signed.headers["location"] == "/"
    cookie = signed.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    page = await panel.get("/servers")
    return page.text.split('name="csrf" value="')[1].split('"')[0]


@pytest.mark.parametrize("path", ["/", "/leases", "/orders", "/payments", "/users/77", "/servers"])
async def test_every_page_asks_for_the_password_first(panel: httpx.AsyncClient, path: str) -> None:
    response = await panel.get(path)
    assert response.status_code == 303 and response.headers["location"] == "/login"


async def test_a_wrong_password_opens_nothing(panel: httpx.AsyncClient) -> None:
    refused = await panel.post("/login", data={"password": "guess guess"})
    assert refused.status_code == 401 and COOKIE not in panel.cookies
    assert (await panel.get("/")).status_code == 303


async def test_a_session_expires(panel: httpx.AsyncClient, clock: ManualClock) -> None:
    await _sign_in(panel)
    clock.advance(timedelta(hours=13))
    assert (await panel.get("/")).status_code == 303


async def test_the_overview_shows_queue_nodes_and_both_plots(panel: httpx.AsyncClient) -> None:
    await _sign_in(panel)
    page = await panel.get("/")
    assert page.status_code == 200 and "default-src 'none'" in page.headers["content-security-policy"]
    html = page.text
    assert 'data-state="queued">queued<b>4</b>' in html and 'data-state="lapsed">lease ran out<b>1</b>' in html
    assert "worker-a" in html and "12 s ago" in html and 'class="revoked"' in html
    assert html.count('class="point"') == 2 + 2  # two minutes with copies; p50 and p95 of one minute
    assert "(6 in the hour)" in html and 'href="http://core.test/metrics"' in html


async def test_leases_orders_a_ledger_and_payments(panel: httpx.AsyncClient) -> None:
    await _sign_in(panel)
    leases = (await panel.get("/leases")).text
    assert "worker-a" in leases and "AbC123…" in leases and "10.0 s" in leases and "2/5" in leases
    assert "ord-1" in (await panel.get("/orders")).text
    user = (await panel.get("/users/77")).text
    assert "available<b>30</b>" in user and "reserved<b>12</b>" in user and "tg-charge-1" in user
    payments = (await panel.get("/payments")).text
    assert "220" in payments and "no reconciliation recorded yet" in payments
    assert "no coin account" in (await panel.get("/users/5")).text
    assert "no coin account" in (await panel.get(f"/users/{2**64}")).text  # beyond bigint: nobody


async def test_finding_a_user_by_id(panel: httpx.AsyncClient) -> None:
    await _sign_in(panel)
    found = await panel.get("/users", params={"user_id": "77"})
    assert found.status_code == 303 and found.headers["location"] == "/users/77"
    assert (await panel.get("/users", params={"user_id": "drop table"})).status_code == 400
    assert (await panel.get("/users", params={"user_id": str(2**64)})).status_code == 400


async def test_servers_are_added_and_removed_through_forms(panel: httpx.AsyncClient) -> None:
    csrf = await _sign_in(panel)
    added = await panel.post("/servers", data={"csrf": csrf, "host": "Worker-1.lan", "roles": ["worker", "storage"]})
    assert added.status_code == 303 and added.headers["location"] == "/servers"
    page = (await panel.get("/servers")).text
    assert 'data-host="worker-1.lan"' in page and "worker, storage" in page
    again = await panel.post("/servers", data={"csrf": csrf, "host": "worker-1.lan", "roles": ["core"]})
    assert again.status_code == 409
    removed = await panel.post("/servers/remove", data={"csrf": csrf, "host": "worker-1.lan"})
    assert removed.status_code == 303 and "worker-1.lan" not in (await panel.get("/servers")).text


async def test_invalid_servers_are_refused_with_the_reason(panel: httpx.AsyncClient) -> None:
    csrf = await _sign_in(panel)
    bad_host = await panel.post("/servers", data={"csrf": csrf, "host": "<script>", "roles": ["core"]})
    assert bad_host.status_code == 400 and "host: not a hostname" in bad_host.text and "<script>" not in bad_host.text
    no_role = await panel.post("/servers", data={"csrf": csrf, "host": "db-1"})
    assert no_role.status_code == 400 and "choose at least one role" in no_role.text
    bad_role = await panel.post("/servers", data={"csrf": csrf, "host": "db-1", "roles": ["miner"]})
    assert bad_role.status_code == 400


async def test_a_form_without_the_sessions_token_or_from_elsewhere_is_refused(panel: httpx.AsyncClient) -> None:
    csrf = await _sign_in(panel)
    form = {"host": "db-1", "roles": ["postgres"]}
    assert (await panel.post("/servers", data=form)).status_code == 403
    assert (await panel.post("/servers", data={**form, "csrf": "forged"})).status_code == 403
    elsewhere = await panel.post("/servers", data={**form, "csrf": csrf}, headers={"origin": "http://evil.test"})
    assert elsewhere.status_code == 403
    login_elsewhere = await panel.post("/login", data={"password": PASSWORD}, headers={"origin": "http://evil.test"})
    assert login_elsewhere.status_code == 403
    assert "db-1" not in (await panel.get("/servers")).text
    panel.cookies.clear()
    assert (await panel.post("/servers", data={**form, "csrf": csrf})).status_code == 403


async def test_signing_out_ends_the_session(panel: httpx.AsyncClient) -> None:
    csrf = await _sign_in(panel)
    session = panel.cookies[COOKIE]
    assert (await panel.post("/logout", data={"csrf": csrf})).status_code == 303
    panel.cookies.set(COOKIE, session)
    assert (await panel.get("/")).status_code == 303
