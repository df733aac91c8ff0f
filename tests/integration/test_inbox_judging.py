"""Core's inbox judges each event on its own: an event it cannot read is kept as unreadable
with a short reason (its user, when known, is told), counted in /metrics, and never costs
the rest of the page; edge's own counters come with its duty calls."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from videocopies.adapters.postgres.control_views import PostgresControlReadModel, control_pool
from videocopies.adapters.screens import render
from videocopies.embedded.postgres import LocalPostgres

from .core_api import CoreApi, metric, serve_core


@pytest.fixture
async def api(pg_server: LocalPostgres, database: str) -> AsyncIterator[CoreApi]:
    async for served in serve_core(pg_server.url(database)):
        yield served


def event(update_id: Any, user: int | None, kind: str = "text", **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"update_id": update_id, "kind": kind, **fields}
    if user is not None:
        body["user"] = {"id": user, "language_code": "en", "first_name": "U"}
    return body


POISON_PAGE = [
    event(1, 101, text="/start"),
    event(2, 102, "button", data="n:\x005"),  # NUL in callback data
    event(3, 103, "button", data="x" * 65),  # over Telegram's 64 bytes
    event(4, 104, "sticker"),  # a kind core does not know
    event(2**60, 105, text="/start"),  # an update id out of range: only counted
    event(6, None, text="/start"),  # no user: kept, nobody to answer
    event("seven", 107, text="/start"),  # an update id of the wrong type: only counted
    event(8, 108, text=5),  # text of the wrong type
    42,  # not even an object
    event(9, 109, "unreadable", reason="getFile: wrong file_id or the file is temporarily unavailable"),
    event(11, 111, text="\x00" + "A" * 10_000),  # long, with a NUL: the reason must not echo it
    event(10, 110, text="/help"),
]


async def test_a_page_of_poison_stores_every_event_it_can(api: CoreApi) -> None:
    async with api.client("edge-1") as edge:
        answer = await edge.post("/v1/inbox", json={"events": POISON_PAGE})
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"stored": 9, "unreadable": 10}
        again = await edge.post("/v1/inbox", json={"events": POISON_PAGE})
        assert again.json() == {"stored": 0, "unreadable": 10}  # stored once, by update id

    kept = dict((u, (user, reason)) for u, user, reason in await api.rows(
        "SELECT update_id, user_id, payload->>'reason' FROM inbox WHERE kind = 'unreadable' ORDER BY update_id"
    ))
    assert sorted(kept) == [2, 3, 4, 6, 8, 9, 11]
    assert kept[2] == (102, "data: String should match pattern '^[^\\x00]*$'")
    assert kept[3] == (103, "data: String should have at most 64 characters")
    assert kept[4][1].startswith("kind: Input should be")
    assert kept[6] == (0, "user: Field required")
    assert kept[9] == (109, "getFile: wrong file_id or the file is temporarily unavailable")
    assert all(len(reason) <= 200 and "AAAA" not in reason for _, reason in kept.values())

    pool = control_pool(api.core.container.gateways.config.database_url())
    await pool.open(wait=True)
    try:
        listed = await PostgresControlReadModel(pool).unreadable(50)
    finally:
        await pool.close()
    # Newest first, as stored: the page's events in one statement, then the one nobody sent.
    assert [(row.update_id, row.user_id) for row in listed] == [
        (6, None), (11, 111), (9, 109), (8, 108), (4, 104), (3, 103), (2, 102),
    ]
    assert listed[0].reason == "user: Field required"

    await api.until("SELECT count(*) FROM outbox HAVING count(*) >= 8", timeout=15)
    said = dict(await api.rows("SELECT user_id, payload->>'screen' FROM outbox ORDER BY id"))
    assert said == {101: "welcome", 102: "unreadable", 103: "unreadable", 104: "unreadable", 108: "unreadable",
                    109: "unreadable", 110: "help", 111: "unreadable"}
    assert render("screen", {"screen": "unreadable"}, "en").text == (
        "I could not read that. Send your video again, or /help."
    )

    async with api.client() as anyone:
        figures = (await anyone.get("/metrics")).text
    counted = {reason: metric(figures, f'videocopies_inbox_unreadable_total{{reason="{reason}"}}')
               for reason in ("pattern", "length", "kind", "range", "missing", "type", "not_an_object", "edge")}
    # Each page counted its unreadable events as it came (the page came twice).
    assert counted == {"pattern": 2, "length": 4, "kind": 2, "range": 2, "missing": 2, "type": 4,
                       "not_an_object": 2, "edge": 2}


async def test_a_valid_page_is_stored_as_before(api: CoreApi) -> None:
    page = [event(100 + n, 500 + n, text="/start") for n in range(100)]
    async with api.client("edge-1") as edge:
        assert (await edge.post("/v1/inbox", json={"events": page})).json() == {"stored": 100, "unreadable": 0}


async def test_the_page_itself_is_still_checked(api: CoreApi) -> None:
    async with api.client("edge-1") as edge, api.client() as anonymous:
        assert (await anonymous.post("/v1/inbox", json={"events": [event(1, 1)]})).status_code == 401
        assert (await edge.post("/v1/inbox", json={"events": []})).status_code == 422
        assert (await edge.post("/v1/inbox", json={"events": [event(1, 1)] * 1001})).status_code == 422
        assert (await edge.post("/v1/inbox", json={"updates": []})).status_code == 422
        foreign = event(5, 1, "video", video={"file_id": "f", "size": 1, "duration_s": 1, "width": 2, "height": 2,
                                              "source_key": "sources/2/5.mp4"})
        assert (await edge.post("/v1/inbox", json={"events": [foreign]})).status_code == 403


async def test_a_video_event_carries_what_edge_found(api: CoreApi) -> None:
    video = {"file_id": "f1", "size": 2_000_000, "duration_s": 0, "width": 0, "height": 0, "mime_type": "video/mp4",
             "source_key": None, "file_unique_id": "u1", "refusal": "unavailable", "fps": 0, "probed": False}
    unchecked = {**video, "file_id": "f2", "refusal": None, "source_key": "sources/601/21.mp4", "sha256": "0" * 64}
    async with api.client("edge-1") as edge:
        page = [event(20, 600, "video", video=video), event(21, 601, "video", video=unchecked)]
        assert (await edge.post("/v1/inbox", json={"events": page})).json() == {"stored": 2, "unreadable": 0}
    await api.until("SELECT count(*) FROM outbox HAVING count(*) >= 2")
    assert dict(await api.rows("SELECT user_id, payload->>'screen' FROM outbox")) == {
        600: "video_unavailable", 601: "video_unchecked",
    }


async def test_edge_counters_come_with_its_duty_calls(api: CoreApi) -> None:
    stats = {"unreadable": 3, "loop_restarts": 1, "flood_pauses": 2, "downloads": 5, "scratch_bytes": 0}
    async with api.client("edge-1") as edge:
        token = {"token": "edge-1-duty-token-0001"}
        held = await edge.post("/v1/duties/poll-telegram", json={**token, "stats": stats})
        assert held.status_code == 200 and held.json()["held"] is True
        for bad in ({"x": -1}, {"Bad-Name": 1}, {f"n{i}": 1 for i in range(257)}):
            assert (await edge.post("/v1/duties/poll-telegram", json={**token, "stats": bad})).status_code == 422
        assert (await edge.post("/v1/duties/poll-telegram", json=token)).status_code == 200  # stats are optional
    async with api.client() as anyone:
        figures = (await anyone.get("/metrics")).text
        info = (await anyone.get("/_info")).json()
    assert metric(figures, 'videocopies_edge_loop_restarts{node="edge-1"}') == 1
    assert metric(figures, 'videocopies_edge_flood_pauses{node="edge-1"}') == 2
    assert {k: v for k, v in info["edges"]["edge-1"].items() if k != "at"} == stats
