"""JsonWire over TLS, against a server whose certificate a private CA signed (as an operator's
core is set up with VIDEOCOPIES_CORE_CA): the chain and the name are checked, a kept-alive TLS
connection is reused and replaced like a plain one, and silence is a timeout. The CA and the
certificates are made here by the openssl command line."""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import attrs
import pytest

from videocopies.adapters.http.wire import JsonWire, WireError

EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


@attrs.frozen
class Certificates:
    ca: str  # the private CA's certificate: what a node is given
    for_this_host: tuple[str, str]  # certificate and key for 127.0.0.1 and localhost
    for_another_host: tuple[str, str]  # the same CA's, for another name only


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def _signed_by_ca(directory: Path, name: str, alt_names: str) -> tuple[str, str]:
    key, request, cert, extensions = (directory / f"{name}.{kind}" for kind in ("key", "csr", "crt", "ext"))
    extensions.write_text(f"subjectAltName={alt_names}\n")
    _openssl("req", "-new", *EC, "-keyout", str(key), "-out", str(request), "-subj", f"/CN={name}")
    _openssl("x509", "-req", "-in", str(request), "-CA", str(directory / "ca.crt"), "-CAkey", str(directory / "ca.key"),
             "-CAcreateserial", "-days", "2", "-out", str(cert), "-extfile", str(extensions))
    return str(cert), str(key)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    directory = tmp_path_factory.mktemp("wire-tls")
    _openssl("req", "-x509", *EC, "-keyout", str(directory / "ca.key"), "-out", str(directory / "ca.crt"),
             "-days", "2", "-subj", "/CN=videocopies test CA",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    return Certificates(
        str(directory / "ca.crt"),
        _signed_by_ca(directory, "core", "IP:127.0.0.1,DNS:localhost"),
        _signed_by_ca(directory, "elsewhere", "DNS:elsewhere.invalid"),
    )


@attrs.define
class TlsServer:
    """Answers each request with its JSON body echoed, or (when `silent`) never."""

    port: int = 0
    connections: int = 0
    requests: int = 0
    silent: bool = False
    chunked_close: bool = False
    _writers: list[asyncio.StreamWriter] = attrs.field(factory=list)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.append(writer)
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line[15:]) for line in head.lower().split(b"\r\n")
                              if line.startswith(b"content-length:"))
                body = await reader.readexactly(length)
                self.requests += 1
                if self.silent:
                    await asyncio.sleep(3600)
                if self.chunked_close:
                    writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                                 b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
                    await writer.drain()
                    break
                payload = json.dumps({"echo": json.loads(body)}).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(payload), payload))
                await writer.drain()
        writer.close()

    def drop_all(self) -> None:
        for writer in self._writers:
            writer.close()


Start = Callable[[tuple[str, str]], Awaitable[TlsServer]]


@pytest.fixture
async def start_tls() -> AsyncIterator[Start]:
    started: list[tuple[asyncio.Server, TlsServer]] = []

    async def start(pair: tuple[str, str]) -> TlsServer:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(*pair)
        tls = TlsServer()
        server = await asyncio.start_server(tls.serve, "127.0.0.1", 0, ssl=context)
        tls.port = server.sockets[0].getsockname()[1]
        started.append((server, tls))
        return tls

    yield start
    for server, tls in started:
        server.close()
        tls.drop_all()


async def test_a_certificate_the_private_ca_signed_is_trusted_and_its_connection_kept(
    certificates: Certificates, start_tls: Start
) -> None:
    server = await start_tls(certificates.for_this_host)
    wire = JsonWire(f"https://127.0.0.1:{server.port}", ca_file=certificates.ca)
    for n in range(3):
        assert await wire.post("/v1/x", json.dumps({"n": n}).encode(), 5) == (200, b'{"echo": {"n": %d}}' % n)
    await wire.close()
    assert (server.requests, server.connections) == (3, 1)


async def test_the_name_is_checked_as_well_as_the_chain(certificates: Certificates, start_tls: Start) -> None:
    by_name = await start_tls(certificates.for_this_host)
    wire = JsonWire(f"https://localhost:{by_name.port}", ca_file=certificates.ca)
    assert (await wire.post("/v1/x", b"{}", 5))[0] == 200  # the name, not only the address, is verified
    await wire.close()

    misnamed = await start_tls(certificates.for_another_host)
    wire = JsonWire(f"https://127.0.0.1:{misnamed.port}", ca_file=certificates.ca)
    with pytest.raises(WireError, match="CERTIFICATE_VERIFY_FAILED"):
        await wire.post("/v1/x", b"{}", 5)
    await wire.close()
    assert misnamed.requests == 0  # nothing was sent to a server that is not the one named


async def test_a_tls_connection_the_server_let_go_is_replaced_without_losing_the_request(
    certificates: Certificates, start_tls: Start
) -> None:
    server = await start_tls(certificates.for_this_host)
    wire = JsonWire(f"https://127.0.0.1:{server.port}", ca_file=certificates.ca)
    await wire.post("/v1/x", b"{}", 5)
    server.drop_all()
    await asyncio.sleep(0.05)
    status, _ = await wire.post("/v1/x", b'{"again": true}', 5)
    await wire.close()
    assert (status, server.requests, server.connections) == (200, 2, 2)


async def test_a_chunked_answer_that_closes_the_tls_connection_is_read_whole(
    certificates: Certificates, start_tls: Start
) -> None:
    server = await start_tls(certificates.for_this_host)
    server.chunked_close = True
    wire = JsonWire(f"https://127.0.0.1:{server.port}", ca_file=certificates.ca)
    for n in range(2):
        assert await wire.post("/v1/x", b'{"n": %d}' % n, 5) == (200, b'{"n": %d}' % n)
    await wire.close()
    assert server.connections == 2  # the server said close: a new TLS connection for the next


async def test_a_silent_tls_server_is_a_timeout_and_its_connection_is_dropped(
    certificates: Certificates, start_tls: Start
) -> None:
    server = await start_tls(certificates.for_this_host)
    wire = JsonWire(f"https://127.0.0.1:{server.port}", ca_file=certificates.ca)
    server.silent = True
    with pytest.raises(TimeoutError):
        await wire.post("/v1/x", b"{}", 0.3)
    server.silent = False
    assert (await wire.post("/v1/x", b"{}", 5))[0] == 200
    await wire.close()
    assert server.connections == 2


async def test_plain_http_where_tls_was_asked_for_is_a_wire_error() -> None:
    async def plain(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            await reader.read(1024)
            writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(plain, "127.0.0.1", 0)
    wire = JsonWire(f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}")
    try:
        with pytest.raises(WireError, match="cannot connect"):
            await wire.post("/v1/x", b"{}", 5)
    finally:
        await wire.close()
        server.close()
