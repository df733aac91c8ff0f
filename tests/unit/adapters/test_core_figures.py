"""The panel reads every core's /metrics at once and shows each node once, as the core that heard
it last has it; a core it cannot read is named with why, and the others' figures still shown.
Each core here is a small real HTTP server answering with what a real CoreMetrics writes."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from videocopies.adapters.http.control.core_figures import CoreMetricsFigures, merged
from videocopies.adapters.http.metrics import CoreMetrics
from videocopies.application.ports import CoreAnswer, CoreUnreachable, NodeFigures, ScratchUse, StoreDisk
from videocopies.embedded.postgres import free_port

AWAY = f"http://127.0.0.1:{free_port()}"  # nothing listens there


@contextlib.asynccontextmanager
async def _core(metrics: CoreMetrics, status: str = "200 OK") -> AsyncIterator[str]:
    """A core's /metrics on a port of its own; its URL."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        body = await metrics.render()
        writer.write(f"HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
                     "Connection: close\r\n\r\n".encode() + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    async with server:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


def _shown(figures: NodeFigures) -> dict[tuple[str, str], tuple[int, int, str]]:
    return {(use.role, use.node): (use.bytes, use.files, use.heard_by) for use in figures.scratch}


def _later() -> None:
    """Past the current time, so that the next report is heard later than the last."""
    now = time.time()
    while time.time() <= now:
        time.sleep(0.001)


async def test_a_node_heard_by_two_cores_is_shown_once_from_the_core_that_heard_it_last() -> None:
    one, two = CoreMetrics(), CoreMetrics()
    one.scratch_reported("worker", "w1", 100, 1)
    one.scratch_reported("edge", "e1", 7, 1)
    _later()
    two.scratch_reported("worker", "w1", 200, 2)  # w1 failed over to the second core
    two.scratch_reported("worker", "w2", 50, 1)
    async with _core(one) as first, _core(two) as second:
        read = await CoreMetricsFigures([first, second]).node_figures()
        in_other_order = await CoreMetricsFigures([second, first]).node_figures()
        _later()
        one.scratch_reported("worker", "w1", 300, 3)  # and came back
        back = await CoreMetricsFigures([first, second]).node_figures()

    assert _shown(read) == {
        ("edge", "e1"): (7, 1, first), ("worker", "w1"): (200, 2, second), ("worker", "w2"): (50, 1, second),
    }
    assert [(use.role, use.node) for use in read.scratch] == [("edge", "e1"), ("worker", "w1"), ("worker", "w2")]
    assert _shown(in_other_order) == _shown(read)
    assert _shown(back)[("worker", "w1")] == (300, 3, first)
    assert read.cores == (CoreAnswer(first), CoreAnswer(second)) and read.unread == ()


async def test_a_core_that_cannot_be_read_is_named_and_the_others_figures_are_shown() -> None:
    up, failing = CoreMetrics(), CoreMetrics()
    up.scratch_reported("worker", "w1", 100, 1)
    failing.scratch_reported("worker", "w9", 900, 9)
    async with _core(up) as first, _core(failing, "503 Service Unavailable") as broken:
        read = await CoreMetricsFigures([first, AWAY, broken]).node_figures()

    assert _shown(read) == {("worker", "w1"): (100, 1, first)}
    assert [answer.core for answer in read.cores] == [first, AWAY, broken]
    assert [answer.core for answer in read.unread] == [AWAY, broken]
    assert [str(answer.unreachable).split(":")[0] for answer in read.unread] == ["ConnectError", "HTTPStatusError"]
    assert "503" in str(read.unread[1].unreachable)
    assert read.disks == ((None, (first,)),)  # only the cores read have a say about the disk


async def test_the_cores_are_asked_at_once() -> None:
    """Each core here answers only once both were asked: asked one after the other, the first
    would wait out its timeout."""
    asked = 0
    both_asked = asyncio.Event()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal asked
        await reader.readuntil(b"\r\n\r\n")
        asked += 1
        if asked == 2:
            both_asked.set()
        await both_asked.wait()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await writer.drain()
        writer.close()

    one, two = await asyncio.start_server(answer, "127.0.0.1", 0), await asyncio.start_server(answer, "127.0.0.1", 0)
    async with one, two:
        urls = [f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}" for server in (one, two)]
        read = await CoreMetricsFigures(urls, timeout_s=1.0).node_figures()
    assert read.unread == () and asked == 2


async def test_with_every_core_away_the_figures_are_not_shown_and_each_core_is_named() -> None:
    async with _core(CoreMetrics(), "500 Internal Server Error") as broken:
        with pytest.raises(CoreUnreachable) as away:
            await CoreMetricsFigures([AWAY, broken]).node_figures()
    assert away.value.reason.startswith(f"{AWAY}: ConnectError") and f"; {broken}: HTTPStatusError" in away.value.reason


async def test_one_core_reads_as_before() -> None:
    metrics = CoreMetrics(store_disk=lambda: (1000, 400))
    metrics.scratch_reported("worker", "w1", 100, 1)
    before = datetime.now(UTC)
    async with _core(metrics) as core:
        read = await CoreMetricsFigures([core + "/"]).node_figures()
    with pytest.raises(CoreUnreachable) as away:
        await CoreMetricsFigures([AWAY]).node_figures()

    assert read.cores == (CoreAnswer(core, StoreDisk(1000, 400)),) and read.disks == ((StoreDisk(1000, 400), (core,)),)
    (use,) = read.scratch
    assert (use.role, use.node, use.bytes, use.files, use.heard_by) == ("worker", "w1", 100, 1, core)
    assert use.heard_at is not None and abs((use.heard_at - before).total_seconds()) < 5
    assert away.value.reason.startswith(f"{AWAY}: ConnectError")


def _answer(core: str, *uses: ScratchUse, disk: StoreDisk | None = None) -> NodeFigures:
    return NodeFigures((CoreAnswer(core, disk),), uses)


def test_a_core_that_does_not_say_when_loses_to_one_that_does_and_equals_go_to_the_first() -> None:
    at = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
    old_core = _answer("a", ScratchUse("worker", "w1", 1, 1, "a", None), ScratchUse("edge", "e1", 1, 1, "a", None))
    new_core = _answer("b", ScratchUse("worker", "w1", 2, 2, "b", at))
    same_time = _answer("c", ScratchUse("worker", "w1", 3, 3, "c", at))
    also_silent = _answer("d", ScratchUse("edge", "e1", 4, 4, "d", None))

    figures = merged([old_core, new_core, same_time, also_silent])
    assert _shown(figures) == {("edge", "e1"): (1, 1, "a"), ("worker", "w1"): (2, 2, "b")}
    assert _shown(merged([same_time, new_core])) == {("worker", "w1"): (3, 3, "c")}


def test_the_store_disk_is_shown_once_when_the_cores_agree_and_by_core_when_they_do_not() -> None:
    shared, local = StoreDisk(1000, 400), StoreDisk(500, 100)
    agree = merged([_answer("a", disk=shared), _answer("b", disk=shared)])
    s3 = merged([_answer("a"), _answer("b")])
    differ = merged([_answer("a", disk=local), _answer("b"), _answer("c", disk=local)])

    assert agree.disks == ((shared, ("a", "b")),)
    assert s3.disks == ((None, ("a", "b")),)
    assert differ.disks == ((local, ("a", "c")), (None, ("b",)))
