"""Guessing the panel's password, against the control role as a process over real HTTP: after
the allowed wrong passwords an address gets 429 with Retry-After (even with the right
password), a burst of parallel guesses is counted as it arrives, the account as a whole is
limited across addresses, and one address signing in does not clear another's count."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from integration.harness import wait_answering
from videocopies.embedded.postgres import LocalPostgres, free_port
from videocopies.runtime.launch import stop_process

PASSWORD = "operator-secret-1"


@pytest.fixture
def panel(pg_server: LocalPostgres, database: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """The control role on its own port; `request.param` sets its sign-in limits."""
    port = free_port()
    env = {
        **os.environ, "VIDEOCOPIES_DATABASE_URL": pg_server.url(database), "VIDEOCOPIES_CONTROL_PASSWORD": PASSWORD,
        "VIDEOCOPIES_CONTROL_PORT": str(port), "VIDEOCOPIES_CONTROL_INVENTORY": str(tmp_path / "inventory.sqlite3"),
        **getattr(request, "param", {}),
    }
    process = subprocess.Popen([sys.executable, "-m", "videocopies.cli", "control"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_answering(process, f"{base}/login")
        yield base
    finally:
        code, err = stop_process(process)
        assert code == 0, err.decode()


def _client(base: str, address: str) -> httpx.AsyncClient:
    """A client whose connections come from `address` (any 127.x.y.z reaches the panel on 127.0.0.1)."""
    return httpx.AsyncClient(base_url=base, transport=httpx.AsyncHTTPTransport(local_address=address), timeout=30)


async def _sign_in(
    base: str, address: str, password: str, times: int = 1, parallel: bool = False
) -> list[httpx.Response]:
    async with _client(base, address) as client:
        if parallel:
            return list(await asyncio.gather(*(client.post("/login", data={"password": password})
                                               for _ in range(times))))
        return [await client.post("/login", data={"password": password}) for _ in range(times)]


def _statuses(responses: list[httpx.Response]) -> list[int]:
    return sorted(r.status_code for r in responses)


def test_after_five_wrong_passwords_an_address_waits_and_another_address_still_signs_in(panel: str) -> None:
    async def story() -> tuple[list[httpx.Response], ...]:
        wrong = await _sign_in(panel, "127.0.0.2", "guess-one", times=5)
        right_but_late = await _sign_in(panel, "127.0.0.2", PASSWORD)
        elsewhere = await _sign_in(panel, "127.0.0.3", PASSWORD)
        still = await _sign_in(panel, "127.0.0.2", PASSWORD)
        return wrong, right_but_late, elsewhere, still

    wrong, (right_but_late,), (elsewhere,), (still,) = asyncio.run(story())

    assert _statuses(wrong) == [401] * 5
    assert right_but_late.status_code == 429 and "too many wrong passwords" in right_but_late.text
    assert 880 <= int(right_but_late.headers["Retry-After"]) <= 900
    assert elsewhere.status_code == 303 and "videocopies_control" in elsewhere.headers["set-cookie"]
    assert still.status_code == 429  # the other address signing in cleared nothing here


def test_parallel_guesses_are_counted_as_they_arrive(panel: str) -> None:
    burst = asyncio.run(_sign_in(panel, "127.0.0.2", "guess", times=40, parallel=True))

    assert _statuses(burst) == [401] * 5 + [429] * 35


@pytest.mark.parametrize(
    "panel",
    [{"VIDEOCOPIES_CONTROL_LOGIN_FAILURES": "3", "VIDEOCOPIES_CONTROL_LOGIN_ACCOUNT_FAILURES": "5"}],
    indirect=True,
)
def test_the_account_is_limited_across_addresses(panel: str) -> None:
    async def story() -> tuple[list[httpx.Response], ...]:
        first = await _sign_in(panel, "127.0.0.2", "guess", times=3, parallel=True)
        second = await _sign_in(panel, "127.0.0.3", "guess", times=2, parallel=True)
        third = await _sign_in(panel, "127.0.0.4", PASSWORD)
        return first, second, third

    first, second, (third,) = asyncio.run(story())

    assert _statuses(first) == [401] * 3 and _statuses(second) == [401] * 2
    assert third.status_code == 429 and int(third.headers["Retry-After"]) > 0


def test_a_wait_ends_when_the_window_has_passed() -> None:
    from videocopies.adapters.http.control.login_limits import LoginLimits, Refused  # new with the limits

    clock = [1000.0]
    limits = LoginLimits(per_address=2, per_account=10, window_s=60, now=lambda: clock[0])
    for _ in range(2):
        assert not isinstance(limits.begin("10.0.0.1"), Refused)
        clock[0] += 10
    refused = limits.begin("10.0.0.1")
    assert refused == Refused(40)  # the first failure leaves the window at 1060
    clock[0] = 1060.0
    assert not isinstance(limits.begin("10.0.0.1"), Refused)
    assert limits.begin("10.0.0.1") == Refused(10)
