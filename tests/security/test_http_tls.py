"""Core serves https itself (VIDEOCOPIES_TLS_CERT/_KEY) and nodes verify it against a
private CA (VIDEOCOPIES_CORE_CA); a certificate from anyone else is refused. The
certificates are made here by the openssl command line."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from integration.harness import wait_answering
from videocopies.adapters.http.client import WrongNode, identify
from videocopies.adapters.http.job_leases import HttpJobLeases
from videocopies.adapters.http.wire import JsonWire, WireError
from videocopies.domain.shared import WorkerId
from videocopies.embedded.postgres import LocalPostgres, free_port
from videocopies.runtime.launch import issue_token, stop_process


def self_signed(directory: Path, name: str) -> tuple[str, str]:
    """A certificate for 127.0.0.1 and localhost that is its own CA; its file and its key's."""
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", f"/CN={name}",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True,
    )
    return str(cert), str(key)


@pytest.fixture
def certificates(tmp_path: Path) -> dict[str, tuple[str, str]]:
    return {name: self_signed(tmp_path, name) for name in ("core", "stranger")}


async def _tls_echo(cert: str, key: str) -> tuple[asyncio.Server, int]:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line[15:]) for line in head.lower().split(b"\r\n")
                              if line.startswith(b"content-length:"))
                payload = json.dumps({"echo": json.loads(await reader.readexactly(length))}).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(payload), payload))
        writer.close()

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    port = free_port()
    return await asyncio.start_server(answer, "127.0.0.1", port, ssl=context), port


async def test_the_wire_speaks_tls_to_a_server_of_its_ca_only(certificates: dict[str, tuple[str, str]]) -> None:
    server, port = await _tls_echo(*certificates["core"])
    url = f"https://127.0.0.1:{port}"
    trusting = JsonWire(url, ca_file=certificates["core"][0])
    strangers = JsonWire(url, ca_file=certificates["stranger"][0])
    systems = JsonWire(url)
    try:
        for _ in range(2):  # the second over the kept-alive TLS connection
            assert await trusting.post("/v1/x", b'{"n": 1}', timeout_s=5) == (200, b'{"echo": {"n": 1}}')
        for wire in (strangers, systems):
            with pytest.raises(WireError, match="CERTIFICATE_VERIFY_FAILED"):
                await wire.post("/v1/x", b"{}", timeout_s=5)
    finally:
        for wire in (trusting, strangers, systems):
            await wire.close()
        server.close()


@contextlib.contextmanager
def _core_over_tls(database_url: str, cert: str, key: str) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "VIDEOCOPIES_QUOTE_SECRET": "tls-test-a-quote-secret-of-at-least-32-bytes",
           "VIDEOCOPIES_DATABASE_URL": database_url, "VIDEOCOPIES_CORE_PORT": str(port),
           "VIDEOCOPIES_TLS_CERT": cert, "VIDEOCOPIES_TLS_KEY": key}
    core = subprocess.Popen([sys.executable, "-m", "videocopies.cli", "core"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"https://127.0.0.1:{port}"
    try:
        wait_answering(core, f"{url}/_info", verify=ssl.create_default_context(cafile=cert))
        yield url
    finally:
        code, err = stop_process(core)
        assert code == 0, err.decode()[-2000:]


def test_a_node_reaches_core_over_tls_with_its_ca(
    pg_server: LocalPostgres, database: str, certificates: dict[str, tuple[str, str]]
) -> None:
    url = pg_server.url(database)
    token = issue_token(url, "worker-tls")
    cert, key = certificates["core"]
    with _core_over_tls(url, cert, key) as core_url:
        with pytest.raises(httpx.RemoteProtocolError):  # plain HTTP on its TLS port: nothing served
            httpx.get(core_url.replace("https:", "http:") + "/_info", timeout=5)
        node_env = {"VIDEOCOPIES_CORE_URL": core_url, "VIDEOCOPIES_NODE_TOKEN": token}
        from videocopies.roles.nodes_link import core_client  # how every node builds its client
        from videocopies.settings.links import CoreLink

        async def as_a_worker(ca: str | None) -> list[object]:
            link = CoreLink.from_env(node_env | ({"VIDEOCOPIES_CORE_CA": ca} if ca else {}))
            node = core_client(link, retry_for_s=0.5)
            try:
                me = await identify(node, "worker")
                claimed = await HttpJobLeases(node, wait_s=0).claim(WorkerId(me["name"]), 1)
                return [me["name"], list(claimed)]
            finally:
                await node.close()

        assert asyncio.run(as_a_worker(cert)) == ["worker-tls", []]
        for stranger in (None, certificates["stranger"][0]):  # the system's CAs, another CA
            with pytest.raises(WrongNode, match="CERTIFICATE_VERIFY_FAILED"):
                asyncio.run(as_a_worker(stranger))
