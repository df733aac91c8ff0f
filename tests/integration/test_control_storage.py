"""The panel's storage page: objects and bytes by kind and state from their rows, and the store's
disk and each worker's and edge's scratch as a real core heard them from the nodes' own reports
(a worker's claim, an edge's duty request); with core away, the rows are still shown and the
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


@contextlib.asynccontextmanager
async def _panel(url: str, core_url: str, inventory: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The control role's app as `videocopies control` builds it, signed in."""
    port = free_port()
    running = uvicorn.Server(uvicorn.Config(build(url, PASSWORD, inventory, core_url), host="127.0.0.1", port=port,
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


async def test_the_storage_page_shows_objects_the_store_disk_and_every_nodes_scratch(
    pg_server: LocalPostgres, database: str, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    await seed(url)  # three copies stored, under two users' sources
    store = FilesystemObjectStore(tmp_path / "objects")
    async with contextlib.asynccontextmanager(serve_core)(url, store=store, nodes=NODES) as core:
        async with core.client("worker-s") as worker, core.client("edge-s") as edge:
            claimed = await worker.post("/v1/jobs/claim", json={
                "wait_s": 0, "max_source_bytes": 0, "stats": {"scratch_used_bytes": 1234, "scratch_files": 3},
            })
            assert claimed.status_code == 200, claimed.text
            await edge.post("/v1/duties/poll-telegram", json={
                "token": "e" * 32, "stats": {"scratch_used_bytes": 777, "scratch_files": 2},
            })
        async with _panel(url, core.url, tmp_path / "inventory.sqlite3") as panel:
            figures, page = await _storage(panel)
            core.core.metrics.scratch_reported("worker", "worker-s", 4321, 1)  # a later claim's report
            later, _ = await _storage(panel)
    async with _panel(url, "http://127.0.0.1:9", tmp_path / "inventory.sqlite3") as panel:
        away, away_page = await _storage(panel)

    copies = {(t["kind"], t["state"]): (t["objects"], t["bytes"]) for t in figures["objects"]}
    assert copies[("copy", "stored")] == (3, 1000 + 1000 + 1001)
    assert copies[("source", "stored")][0] == 2
    total, free = store.disk_usage()
    disk = figures["disk"]
    assert disk["total"] == total and abs(disk["free"] - free) < 64 * 1024**2 and disk["used"] == total - disk["free"]
    assert figures["scratch"] == [
        {"role": "edge", "node": "edge-s", "bytes": 777, "files": 2},
        {"role": "worker", "node": "worker-s", "bytes": 1234, "files": 3},
    ]
    assert figures["core_unreachable"] is None
    assert {"role": "worker", "node": "worker-s", "bytes": 4321, "files": 1} in later["scratch"]
    # The page itself shows the same figures.
    assert 'data-kind="copy" data-state="stored" data-objects="3"' in page
    assert 'data-role="worker" data-node="worker-s" data-bytes="1234" data-files="3"' in page
    assert 'data-role="edge" data-node="edge-s" data-bytes="777" data-files="2"' in page
    # The page and the JSON are two requests, each reading the disk: free space moves between them.
    (page_free,) = re.findall(r'data-what="free" data-bytes="(\d+)"', page)
    assert abs(int(page_free) - disk["free"]) < 64 * 1024**2 and "core-unreachable" not in page

    assert away["objects"] == figures["objects"] and away["disk"] is None and away["scratch"] is None
    assert away["core_unreachable"] and 'id="core-unreachable"' in away_page
    assert 'data-kind="copy" data-state="stored" data-objects="3"' in away_page
