"""The panel's storage page: objects and bytes by kind and state from their rows, and the store's
disk and each worker's and edge's scratch as real cores heard them from the nodes' own reports
(a worker's claim, an edge's duty request). With two cores, each node is shown once, as the core
that heard it last has it, and each core's disk where they differ; with a core away, the page
names it and shows the others' figures; with every core away, the rows are still shown and the
page says what it could not read."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from videocopies.adapters.objectstore.filesystem import FilesystemObjectStore
from videocopies.embedded.postgres import LocalPostgres, free_port
from videocopies.roles.control import build

from .control_seed import seed
from .core_api import serve_core

PASSWORD = "operator-secret-1"
NODES = (("worker-s", "worker"), ("edge-s", "edge"))  # the seed issued worker-a and edge-1
AWAY = "http://127.0.0.1:9"


@contextlib.asynccontextmanager
async def _panel(url: str, core_urls: tuple[str, ...], inventory: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The control role's app as `videocopies control` builds it, signed in."""
    port = free_port()
    running = uvicorn.Server(uvicorn.Config(build(url, PASSWORD, inventory, core_urls), host="127.0.0.1", port=port,
                                            lifespan="on", log_level="warning", loop="none"))
    serving = asyncio.create_task(running.serve())
    while not running.started:
        assert not serving.done(), serving.exception()
        await asyncio.sleep(0.01)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as panel:
            signed_in = await panel.post("/login", data={"password": PASSWORD})
            assert signed_in.status_code == 303, signed_in.text
            yield panel
    finally:
        running.should_exit = True
        await serving


async def _storage(panel: httpx.AsyncClient) -> tuple[dict[str, Any], str]:
    as_json, page = await asyncio.gather(panel.get("/storage.json"), panel.get("/storage"))
    assert as_json.status_code == page.status_code == 200
    return as_json.json(), page.text


async def _claim(client: httpx.AsyncClient, used_bytes: int, files: int) -> None:
    claimed = await client.post("/v1/jobs/claim", json={
        "wait_s": 0, "max_source_bytes": 0, "stats": {"scratch_used_bytes": used_bytes, "scratch_files": files},
    })
    assert claimed.status_code == 200, claimed.text


def _scratch(figures: dict[str, Any]) -> set[tuple[str, str, int, int, str]]:
    return {(s["role"], s["node"], s["bytes"], s["files"], s["heard_by"]) for s in figures["scratch"]}


async def test_the_storage_page_shows_objects_the_store_disk_and_every_nodes_scratch(
    pg_server: LocalPostgres, database: str, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    await seed(url)  # three copies stored, under two users' sources
    store = FilesystemObjectStore(tmp_path / "objects")
    inventory = tmp_path / "inventory.sqlite3"
    async with contextlib.asynccontextmanager(serve_core)(url, store=store, nodes=NODES) as core:
        async with core.client("worker-s") as worker, core.client("edge-s") as edge:
            await _claim(worker, 1234, 3)
            await edge.post("/v1/duties/poll-telegram", json={
                "token": "e" * 32, "stats": {"scratch_used_bytes": 777, "scratch_files": 2},
            })
        async with _panel(url, (core.url,), inventory) as panel:
            figures, page = await _storage(panel)
            core.core.metrics.scratch_reported("worker", "worker-s", 4321, 1)  # a later claim's report
            later, _ = await _storage(panel)
    async with _panel(url, (AWAY,), inventory) as panel:
        away, away_page = await _storage(panel)

    copies = {(t["kind"], t["state"]): (t["objects"], t["bytes"]) for t in figures["objects"]}
    assert copies[("copy", "stored")] == (3, 1000 + 1000 + 1001)
    assert copies[("source", "stored")][0] == 2
    total, free = store.disk_usage()
    disk = figures["disk"]
    assert disk["total"] == total and abs(disk["free"] - free) < 64 * 1024**2 and disk["used"] == total - disk["free"]
    assert figures["disks"] == [{"cores": [core.url], "disk": disk}]
    assert _scratch(figures) == {("edge", "edge-s", 777, 2, core.url), ("worker", "worker-s", 1234, 3, core.url)}
    assert all(use["heard_at"] for use in figures["scratch"])
    assert figures["core_unreachable"] is None and figures["cores"] == [{"core": core.url, "unreachable": None}]
    assert ("worker", "worker-s", 4321, 1, core.url) in _scratch(later)
    # The page itself shows the same figures.
    assert 'data-kind="copy" data-state="stored" data-objects="3"' in page
    assert 'data-role="worker" data-node="worker-s" data-bytes="1234" data-files="3"' in page
    assert 'data-role="edge" data-node="edge-s" data-bytes="777" data-files="2"' in page
    # The page and the JSON are two requests, each reading the disk: free space moves between them.
    (page_free,) = re.findall(r'data-what="free" data-bytes="(\d+)"', page)
    assert abs(int(page_free) - disk["free"]) < 64 * 1024**2 and "core-unreachable" not in page

    assert away["objects"] == figures["objects"] and away["disk"] is None and away["scratch"] is None
    assert away["core_unreachable"].startswith(AWAY) and 'id="core-unreachable"' in away_page
    assert 'data-kind="copy" data-state="stored" data-objects="3"' in away_page


async def test_with_two_cores_each_node_is_shown_once_as_the_core_that_heard_it_last_has_it(
    pg_server: LocalPostgres, database: str, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    await seed(url)
    store = FilesystemObjectStore(tmp_path / "objects")
    inventory = tmp_path / "inventory.sqlite3"
    serving = contextlib.asynccontextmanager(serve_core)
    async with serving(url, store=store, nodes=NODES) as one, serving(url, nodes=(("worker-t", "worker"),)) as two:
        two.tokens["worker-s"] = one.tokens["worker-s"]  # one database: a node's token holds on every core
        async with one.client("worker-s") as worker, one.client("edge-s") as edge:
            await _claim(worker, 1234, 3)
            await edge.post("/v1/duties/poll-telegram", json={
                "token": "e" * 32, "stats": {"scratch_used_bytes": 777, "scratch_files": 2},
            })
        async with two.client("worker-t") as worker:
            await _claim(worker, 55, 1)
        async with two.client("worker-s") as worker:  # worker-s fails over to the second core
            await _claim(worker, 4321, 1)
        async with _panel(url, (one.url, two.url), inventory) as panel:
            both, page = await _storage(panel)
        async with _panel(url, (one.url, AWAY), inventory) as panel:
            one_away, one_away_page = await _storage(panel)

    assert _scratch(both) == {
        ("edge", "edge-s", 777, 2, one.url), ("worker", "worker-s", 4321, 1, two.url),
        ("worker", "worker-t", 55, 1, two.url),
    }
    assert both["core_unreachable"] is None and [c["core"] for c in both["cores"]] == [one.url, two.url]
    # The first core's store is on its disk, the second has none here (as with S3): each is shown, by core.
    assert [d["cores"] for d in both["disks"]] == [[one.url], [two.url]] and both["disks"][1]["disk"] is None
    assert both["disk"] is None and both["disks"][0]["disk"]["total"] == store.disk_usage()[0]
    assert page.count('data-role="worker" data-node="worker-s"') == 1
    assert re.search(f'data-node="worker-s" data-bytes="4321" data-files="1"\\s+data-heard-by="{two.url}"', page)
    assert f'data-cores="{one.url}"' in page and f'data-cores="{two.url}"' in page

    assert _scratch(one_away) == {("edge", "edge-s", 777, 2, one.url), ("worker", "worker-s", 1234, 3, one.url)}
    assert one_away["cores"][1]["core"] == AWAY and one_away["cores"][1]["unreachable"]
    assert one_away["core_unreachable"].startswith(f"{AWAY}: ") and one_away["disk"]["total"] == store.disk_usage()[0]
    assert f'class="error core-unread" data-core="{AWAY}"' in one_away_page and "core-unreachable" not in one_away_page
    assert 'data-role="edge" data-node="edge-s" data-bytes="777"' in one_away_page
