"""The server inventory behaves the same in memory and in its SQLite file, and the file
keeps what was added across a restart of the panel."""

from datetime import UTC, datetime
from pathlib import Path

import pytest

from videocopies.adapters.memory.inventory import InMemoryServerInventory
from videocopies.adapters.sqlite.inventory import SqliteServerInventory
from videocopies.application.inventory import Server, ServerExists
from videocopies.application.ports import ServerInventory

AT = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)


@pytest.fixture(params=["memory", "sqlite"])
def inventory(request: pytest.FixtureRequest, tmp_path: Path) -> ServerInventory:
    if request.param == "memory":
        return InMemoryServerInventory()
    return SqliteServerInventory(tmp_path / "control" / "inventory.sqlite3")


async def test_servers_are_listed_by_host_with_their_roles(inventory: ServerInventory) -> None:
    await inventory.add(Server("worker-2", ("worker",), added_at=AT))
    await inventory.add(Server("10.0.0.5", ("postgres", "core"), "primary", added_at=AT))
    listed = await inventory.servers()
    assert [(s.host, s.roles, s.note) for s in listed] == [
        ("10.0.0.5", ("core", "postgres"), "primary"), ("worker-2", ("worker",), ""),
    ]
    assert listed[0].added_at == AT


async def test_a_host_is_listed_once(inventory: ServerInventory) -> None:
    await inventory.add(Server("edge-1", ("edge",), added_at=AT))
    with pytest.raises(ServerExists):
        await inventory.add(Server("edge-1", ("worker",), added_at=AT))


async def test_removing_a_server(inventory: ServerInventory) -> None:
    await inventory.add(Server("edge-1", ("edge",), added_at=AT))
    assert await inventory.remove("edge-1") is True
    assert await inventory.remove("edge-1") is False
    assert await inventory.servers() == []


async def test_the_file_outlives_the_panel(tmp_path: Path) -> None:
    path = tmp_path / "inventory.sqlite3"
    await SqliteServerInventory(path).add(Server("core-1", ("core",), added_at=AT))
    assert [s.host for s in await SqliteServerInventory(path).servers()] == ["core-1"]
