"""Relocation cannot send the nodes (their tokens, users' updates) anywhere in clear: core
moves them only to https hosts on its allowlist, or to loopback; a node talks plain HTTP
only to a core on its own machine unless told otherwise, at start and when a 308 says so."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import httpx
import pytest

from videocopies.adapters.http.client import CoreClient, CoreUnreachable
from videocopies.embedded.postgres import LocalPostgres, free_port
from videocopies.runtime.launch import CoreProcess, issue_token

ELSEWHERE = "http://core.invalid:8700"


def _move(core: CoreProcess, token: str, url: str) -> int:
    answer = httpx.post(
        f"{core.url}/v1/admin/moved", json={"url": url}, headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    return answer.status_code


def test_core_moves_its_nodes_only_to_allowed_https_hosts_or_loopback(pg_server: LocalPostgres, database: str) -> None:
    url = pg_server.url(database)
    control, worker = issue_token(url, "control-1", "control"), issue_token(url, "worker-1")
    with CoreProcess(url) as core:  # no allowlist: loopback only
        refused = {target: _move(core, control, target) for target in (
            "http://evil.example", "http://evil.example:8700/core", "https://evil.example", "https://green.example",
        )}
        claim = httpx.post(f"{core.url}/v1/jobs/claim", json={}, headers={"Authorization": f"Bearer {worker}"})
        loopback = _move(core, control, "http://127.0.0.1:8701")
    with CoreProcess(url, VIDEOCOPIES_RELOCATION_HOSTS="green.example, blue.example") as core:
        listed = {target: _move(core, control, target) for target in (
            "http://green.example", "https://evil.example", "https://green.example:8443",
        )}
        moved = httpx.post(f"{core.url}/v1/jobs/claim", json={}, headers={"Authorization": f"Bearer {worker}"})

    assert refused == {
        "http://evil.example": 422, "http://evil.example:8700/core": 422,
        "https://evil.example": 403, "https://green.example": 403,
    }
    assert claim.status_code == 200  # nothing moved
    assert loopback == 200
    assert listed == {"http://green.example": 422, "https://evil.example": 403, "https://green.example:8443": 200}
    assert moved.status_code == 308 and moved.headers["x-videocopies-moved"] == "https://green.example:8443"


def test_a_node_refuses_plain_http_to_a_core_elsewhere_at_start() -> None:
    env = {
        key: value for key, value in os.environ.items() if not key.startswith("VIDEOCOPIES_")
    } | {"VIDEOCOPIES_CORE_URL": ELSEWHERE, "VIDEOCOPIES_NODE_TOKEN": "0123abcd.secret", "VIDEOCOPIES_RETRY_FOR_S": "1"}
    worker = subprocess.run(
        [sys.executable, "-m", "videocopies.cli", "worker"], env=env, capture_output=True, timeout=60, check=False
    )
    assert worker.returncode != 0
    said = worker.stderr.decode()
    assert "plain HTTP" in said and "VIDEOCOPIES_ALLOW_PLAIN_HTTP" in said, said[-2000:]

    from videocopies.roles.nodes_link import core_client  # how edge and worker build their client
    from videocopies.settings.links import CoreLink

    def core_client_from_env(env: dict[str, str]) -> CoreClient:
        return core_client(CoreLink.from_env(env))

    with pytest.raises(SystemExit, match="plain HTTP"):  # edge builds its client the same way
        core_client_from_env({"VIDEOCOPIES_CORE_URL": ELSEWHERE, "VIDEOCOPIES_NODE_TOKEN": "0123abcd.secret"})
    told = core_client_from_env({
        "VIDEOCOPIES_CORE_URL": ELSEWHERE, "VIDEOCOPIES_NODE_TOKEN": "0123abcd.secret",
        "VIDEOCOPIES_ALLOW_PLAIN_HTTP": "1",
    })
    assert told.base_url == ELSEWHERE
    asyncio.run(told.close())


async def test_a_node_does_not_follow_a_move_to_plain_http_elsewhere() -> None:
    """A core (hostile, or told wrongly) answers every call with a move to plain HTTP."""
    heads: list[bytes] = []

    async def moved_core(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                heads.append(head)
                length = next((int(line[15:]) for line in head.lower().split(b"\r\n")
                               if line.startswith(b"content-length:")), 0)
                await reader.readexactly(length)
                writer.write(
                    f"HTTP/1.1 308 Permanent Redirect\r\nX-Videocopies-Moved: {ELSEWHERE}\r\n"
                    f"Location: {ELSEWHERE}/v1/jobs/claim\r\nContent-Length: 0\r\n\r\n".encode()
                )
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    port = free_port()
    server = await asyncio.start_server(moved_core, "127.0.0.1", port)
    node = CoreClient(f"http://127.0.0.1:{port}", "0123abcd.secret", retry_for_s=0.5)
    try:
        with pytest.raises(CoreUnreachable, match="not followed"):
            await node.call("POST", "/v1/jobs/claim", {"wait_s": 0})
    finally:
        await node.close()
        server.close()
    assert node.base_url == f"http://127.0.0.1:{port}"  # still the old core, which it asked again
    assert node.moves_refused == len(heads) >= 2
