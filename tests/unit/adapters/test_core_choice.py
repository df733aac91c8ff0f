"""A node given several cores: a call that fails on one goes at once to the next (refused,
timed out, 502/503/504), the node comes back to the first once it has rested, and a
relocation a deploy sent is kept on disk and followed at the node's next start."""

from __future__ import annotations

from pathlib import Path

import httpx

from videocopies.adapters.http.client import CoreClient, CoreUnreachable
from videocopies.adapters.http.core_choice import MOVES_FILE, CoreChoice, core_urls

RENEWED = {"lease_until": "2026-01-01T00:00:00Z", "cancel_requested": False}


async def _no_sleep(_seconds: float) -> None:
    return None


def _client(handler, urls: str, moves: Path | None = None, retry_for_s: float = 30.0) -> CoreClient:  # type: ignore[no-untyped-def]
    return CoreClient(urls, "node.secret", retry_for_s=retry_for_s, transport=httpx.MockTransport(handler),
                      sleep=_no_sleep, moves_file=moves)


def test_the_setting_names_one_core_or_several() -> None:
    assert core_urls("http://a:1/") == ["http://a:1"]
    assert core_urls(" http://a:1, http://b:2 ,") == ["http://a:1", "http://b:2"]


async def test_a_dead_core_is_passed_over_at_once_and_the_same_call_lands_on_the_next() -> None:
    hosts: list[str] = []

    def cores(request: httpx.Request) -> httpx.Response:
        hosts.append(request.url.host)
        if request.url.host == "a":
            raise httpx.ConnectError("refused")
        if request.url.host == "b":
            return httpx.Response(503, json={"detail": "shutting down"})
        return httpx.Response(200, json=RENEWED)

    client = _client(cores, "http://a:1,http://b:2,http://c:3")
    await client.call("POST", "/v1/jobs/j1/renew", {"token": "t"})
    await client.call("POST", "/v1/jobs/j1/renew", {"token": "t"})
    assert hosts == ["a", "b", "c", "c"]  # the resting ones are not asked again at once
    assert client.base_url == "http://c:3"


async def test_the_node_comes_back_to_the_first_core_once_it_has_rested() -> None:
    now = [0.0]
    choice = CoreChoice(["http://a:1", "http://b:2"], rest_s=15.0, clock=lambda: now[0])
    assert choice.failed("http://a:1") and choice.current == "http://b:2"
    assert not choice.preferred()
    now[0] = 16.0
    assert choice.preferred() and choice.current == "http://a:1"


async def test_a_failure_seen_late_on_a_core_left_already_does_not_move_the_node_again() -> None:
    choice = CoreChoice(["http://a:1", "http://b:2"], clock=lambda: 0.0)
    choice.failed("http://a:1")
    assert choice.failed("http://a:1") and choice.current == "http://b:2"  # a second call's failure on a


async def test_when_every_core_is_away_the_call_waits_and_gives_up_at_the_end_of_its_window() -> None:
    def cores(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    client = _client(cores, "http://a:1,http://b:2", retry_for_s=0.0)
    try:
        await client.call("POST", "/v1/jobs/j1/renew", {"token": "t"})
    except CoreUnreachable:
        pass
    else:
        raise AssertionError("a call no core answered succeeded")


async def test_a_relocation_is_kept_on_disk_and_a_restarted_node_goes_to_the_new_core(tmp_path: Path) -> None:
    hosts: list[str] = []

    def cores(request: httpx.Request) -> httpx.Response:
        hosts.append(request.url.host)
        if request.url.host == "blue":
            return httpx.Response(308, headers={"X-Videocopies-Moved": "https://green:8701"})
        return httpx.Response(200, json=RENEWED)

    moves = tmp_path / MOVES_FILE
    before = _client(cores, "https://blue:8700,https://other:8700", moves)
    await before.call("POST", "/v1/jobs/j1/renew", {"token": "t"})
    await before.close()
    assert hosts == ["blue", "green"]
    restarted = _client(cores, "https://blue:8700,https://other:8700", moves)
    assert restarted.cores.urls == ["https://green:8701", "https://other:8700"]
    await restarted.call("POST", "/v1/jobs/j1/renew", {"token": "t"})
    assert hosts == ["blue", "green", "green"]
    await restarted.close()


async def test_an_unreadable_moves_file_is_ignored(tmp_path: Path) -> None:
    moves = tmp_path / MOVES_FILE
    moves.write_text("{not json")
    assert CoreChoice(["http://blue:8700"], moves).urls == ["http://blue:8700"]


async def test_a_core_that_keeps_failing_rests_longer_each_time_until_it_answers() -> None:
    now = [0.0]
    choice = CoreChoice(["http://a:1", "http://b:2"], rest_s=15.0, clock=lambda: now[0])
    rested = []
    for _ in range(3):
        choice.failed("http://a:1")
        back = now[0]
        while not choice.preferred():
            now[0] += 1.0
        rested.append(now[0] - back)
    assert rested == [15.0, 30.0, 60.0]
    choice.answered("http://a:1")
    choice.failed("http://a:1")
    now[0] += 15.0
    assert choice.preferred()  # after an answer, the rest starts from 15 s again
