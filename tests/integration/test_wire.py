"""JsonWire against real sockets: a small HTTP/1.1 server whose behaviour each test sets
(keep-alive, closing, chunked answers, silence). Edge and every node's CoreClient use it, so
the role tests run it against the simulator and core as well."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from videocopies.adapters.http import wire
from videocopies.adapters.http.wire import JsonWire, WireError
from videocopies.embedded.postgres import free_port

Answer = Callable[[bytes, int], bytes | None]  # the request body and its number on its connection


def ok(body: bytes, _: int) -> bytes:
    payload = json.dumps({"ok": True, "echo": json.loads(body)}).encode()
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
        len(payload), payload,
    )


class RawServer:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.connections = 0
        self.requests = 0
        self.heads: list[bytes] = []
        self.port = free_port()
        self._writers: list[asyncio.StreamWriter] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.append(writer)
        served = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.heads.append(head)
                length = next(
                    int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                body = await reader.readexactly(length)
                self.requests += 1
                served += 1
                reply = self.answer(body, served)
                if reply is None:  # silence, then the connection goes
                    await asyncio.sleep(3600)
                writer.write(reply)
                await writer.drain()
                if b"Connection: close" in reply:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    def drop_all(self) -> None:
        """Close every connection, as a server does with idle ones."""
        for writer in self._writers:
            writer.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture
async def start_server() -> AsyncIterator[Callable[[Answer], Awaitable[RawServer]]]:
    started: list[tuple[asyncio.Server, RawServer]] = []

    async def start(answer: Answer) -> RawServer:
        raw = RawServer(answer)
        started.append((await asyncio.start_server(raw.serve, "127.0.0.1", raw.port), raw))
        return raw

    yield start
    for server, raw in started:
        server.close()
        raw.drop_all()


async def test_requests_share_a_kept_alive_connection(start_server) -> None:
    server = await start_server(ok)
    http = JsonWire(server.url)
    for n in range(5):
        status, body = await http.post("/bot1:x/sendMessage", json.dumps({"n": n}).encode(), 5)
        assert status == 200 and json.loads(body)["echo"] == {"n": n}
    await http.close()
    assert (server.requests, server.connections) == (5, 1)


async def test_concurrent_requests_open_at_most_the_connections_allowed(start_server) -> None:
    server = await start_server(ok)
    http = JsonWire(server.url, connections=4)
    answers = await asyncio.gather(*(http.post("/m", json.dumps({"n": n}).encode(), 5) for n in range(40)))
    await http.close()
    assert sorted(json.loads(b)["echo"]["n"] for _, b in answers) == list(range(40))
    assert server.connections <= 4 and server.requests == 40


async def test_a_connection_the_server_let_go_is_replaced_without_losing_the_request(start_server) -> None:
    server = await start_server(ok)
    http = JsonWire(server.url)
    await http.post("/m", b"{}", 5)
    server.drop_all()
    await asyncio.sleep(0.05)
    status, _ = await http.post("/m", b"{}", 5)
    await http.close()
    assert status == 200 and server.requests == 2 and server.connections == 2


async def test_a_connection_idle_too_long_is_not_reused(start_server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "IDLE_S", 0.05)
    server = await start_server(ok)
    http = JsonWire(server.url)
    await http.post("/m", b"{}", 5)
    await asyncio.sleep(0.1)
    await http.post("/m", b"{}", 5)
    await http.close()
    assert server.connections == 2


async def test_chunked_answers_and_connection_close_are_understood(start_server) -> None:
    def chunked(body: bytes, _: int) -> bytes:
        return (b"HTTP/1.1 429 Too Many Requests\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                b"5\r\n{\"ok\"\r\n6\r\n:false\r\n1\r\n}\r\n0\r\n\r\n")

    server = await start_server(chunked)
    http = JsonWire(server.url)
    assert await http.post("/m", b"{}", 5) == (429, b'{"ok":false}')
    assert await http.post("/m", b"{}", 5) == (429, b'{"ok":false}')
    await http.close()
    assert server.connections == 2  # the server said close: a new connection for the next


async def test_no_answer_in_time_is_a_timeout_and_the_connection_is_dropped(start_server) -> None:
    server = await start_server(lambda body, n: None if body == b'"hang"' else ok(body, n))
    http = JsonWire(server.url)
    with pytest.raises(TimeoutError):
        await http.post("/m", b'"hang"', 0.2)
    status, _ = await http.post("/m", b'"fine"', 5)
    await http.close()
    assert status == 200 and server.connections == 2


async def test_a_server_that_is_not_there_is_a_wire_error() -> None:
    http = JsonWire(f"http://127.0.0.1:{free_port()}")
    with pytest.raises(WireError, match="cannot connect"):
        await http.post("/m", b"{}", 5)


async def test_garbage_instead_of_http_is_a_wire_error(start_server) -> None:
    server = await start_server(lambda body, n: b"SMTP ready\r\n\r\n")
    http = JsonWire(server.url)
    with pytest.raises(WireError, match="not an HTTP response"):
        await http.post("/m", b"{}", 5)
    await http.close()


def test_only_http_urls() -> None:
    with pytest.raises(ValueError, match="not an http"):
        JsonWire("ftp://example.invalid")


async def test_methods_headers_and_a_base_path_go_with_each_request(start_server) -> None:
    def moved(body: bytes, _: int) -> bytes:
        return (b"HTTP/1.1 308 Permanent Redirect\r\nX-Videocopies-Moved: http://elsewhere\r\n"
                b"Content-Length: 2\r\n\r\n{}")

    server = await start_server(moved)
    http = JsonWire(f"{server.url}/core/", headers={"Authorization": "Bearer n.s"})
    answer = await http.request("GET", "/v1/nodes/me", None, 5)
    await http.close()
    assert (answer.status, answer.headers["x-videocopies-moved"], answer.body) == (308, "http://elsewhere", b"{}")
    (head,) = server.heads
    lines = head.decode().split("\r\n")
    assert lines[0] == "GET /core/v1/nodes/me HTTP/1.1"
    assert "Authorization: Bearer n.s" in lines and "Content-Length: 0" in lines
    assert not any(line.lower().startswith("content-type") for line in lines)  # no body, no type
