"""A 2 GB request body to core, to every kind of endpoint (a worker's, an edge's, an
operator's, and one that needs no token), declared up front or streamed in chunks, with a
valid token and without one: core refuses it without reading it (or, chunked, as soon as
it passes the route's limit), and its memory does not grow by more than 10 MiB.

Core runs in a process of its own, its memory read from /proc; the body comes from a
generator that reuses one buffer, so neither side ever holds it."""

from __future__ import annotations

import json
import select
import socket
from collections.abc import Iterator

from videocopies.embedded.postgres import LocalPostgres
from videocopies.runtime.launch import CoreProcess, issue_token

KIB, MIB, GIB = 1024, 1024 * 1024, 1024 * 1024 * 1024
BODY = 2 * GIB
GIVE_UP_AFTER = 128 * MIB  # sent and still unanswered: core is reading it
ATTACKED = [("worker", "/v1/jobs/claim"), ("edge", "/v1/inbox"), ("control", "/v1/control/grants"), (None, "/metrics")]


def _chunks(total: int, chunked: bool) -> Iterator[bytes]:
    piece = b" " * MIB
    framed = b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece
    for _ in range(total // MIB):
        yield framed
    if chunked:
        yield b"0\r\n\r\n"


def push(port: int, path: str, token: str | None, chunked: bool, total: int = BODY) -> tuple[int | None, int]:
    """POST `total` bytes to `path` until core answers or closes; its status and the bytes sent."""
    head = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Content-Type: application/json"]
    if token:
        head.append(f"Authorization: Bearer {token}")
    head.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {total}")
    answer, sent = b"", 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        sock.setblocking(False)
        body, pending = _chunks(total, chunked), memoryview(b"")
        while b"\r\n\r\n" not in answer and sent < GIVE_UP_AFTER:
            if not pending:
                pending = memoryview(next(body, b""))
            readable, writable, _ = select.select([sock], [sock] if pending else [], [], 10)
            if not readable and not writable:
                break
            try:
                if readable:
                    if not (data := sock.recv(64 * KIB)):
                        break
                    answer += data
                elif writable:
                    count = sock.send(pending)
                    sent, pending = sent + count, pending[count:]
            except (BrokenPipeError, ConnectionResetError):
                # Core answered and closed with our body unread, so its kernel reset the
                # connection; the answer may already wait in our receive queue (send saw the
                # reset before select saw the answer). Read it rather than lose it.
                answer += _left_to_read(sock)
                break
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else None
    return status, sent


def _left_to_read(sock: socket.socket) -> bytes:
    """What the peer sent before its reset, still queued in this socket."""
    left = b""
    while True:
        try:
            data = sock.recv(64 * KIB)
        except (BlockingIOError, ConnectionResetError, BrokenPipeError):
            return left
        if not data:
            return left
        left += data


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) * KIB


def biggest_inbox_page() -> bytes:
    """The largest page edge builds: 100 updates (getUpdates' most), each with 4096 astral
    characters of text and a 256-character name, escaped as edge's JSON escapes them."""
    events = [
        {"update_id": number, "user": {"id": number, "first_name": "\U0001f600" * 256}, "kind": "text",
         "text": "\U0001f600" * 4096}
        for number in range(1, 101)
    ]
    return json.dumps({"events": events}).encode()


def _warm_up(port: int, tokens: dict[str, str]) -> None:
    """Every route once the ordinary way (the biggest inbox page edge sends, and one body in
    chunks), and each refusal once with a small body."""
    event = {"update_id": 1000, "user": {"id": 1}, "kind": "text", "text": "hi"}
    ordinary = [
        ("worker", "/v1/jobs/claim", json.dumps({}).encode(), False),
        ("edge", "/v1/inbox", biggest_inbox_page(), False),
        ("edge", "/v1/inbox", json.dumps({"events": [event]}).encode(), True),
        ("control", "/v1/control/grants", b'{"user_id": 1, "amount": 1, "reason": "warm-up", "grant_id": "w-1"}', True),
    ]
    for role, path, payload, chunked in ordinary:
        status, answer = push_small(port, path, tokens[role], payload, chunked)
        assert status == 200, (path, status, answer[-300:])
    for role, path in ATTACKED:
        push(port, path, None, chunked=True, total=MIB)
        push(port, path, tokens[role] if role else None, chunked=False, total=MIB)


def push_small(port: int, path: str, token: str, payload: bytes, chunked: bool = False) -> tuple[int | None, bytes]:
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {len(payload)}"
    if chunked:
        halves = (payload[: len(payload) // 2], payload[len(payload) // 2 :])
        payload = b"".join(b"%x\r\n%s\r\n" % (len(half), half) for half in halves) + b"0\r\n\r\n"
    request = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        f"{framing}\r\nConnection: close\r\n\r\n"
    ).encode() + payload
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        answer = b""
        while data := sock.recv(64 * KIB):
            answer += data
    return int(answer.split(b" ", 2)[1]), answer


def test_a_2_gb_body_is_refused_unread_and_core_does_not_grow(pg_server: LocalPostgres, database: str) -> None:
    url = pg_server.url(database)
    tokens = {role: issue_token(url, f"{role}-1", role) for role in ("worker", "edge", "control")}
    outcomes: dict[tuple[str, bool, bool], tuple[int | None, int]] = {}
    with CoreProcess(url) as core:
        assert core.process is not None
        _warm_up(core.port, tokens)
        before = rss(core.process.pid)
        for role, path in ATTACKED:
            for token in ([tokens[role]] if role else []) + [None]:
                for chunked in (False, True):
                    outcomes[(path, token is not None, chunked)] = push(core.port, path, token, chunked)
        after = rss(core.process.pid)

    expected = {
        key: 413 if not key[2] or key[1] or not key[0].startswith("/v1/") else 401 for key in outcomes
    }
    assert {key: status for key, (status, _) in outcomes.items()} == expected
    # Declared: refused before a byte is read; chunked: once past the route's limit (6 MiB at most).
    assert all(sent < 16 * MIB for _, sent in outcomes.values()), outcomes
    print(f"core's RSS {before / MIB:.1f} -> {after / MIB:.1f} MiB;", {k: v for k, v in outcomes.items()})
    assert after - before <= 10 * MIB, f"core grew by {(after - before) / MIB:.1f} MiB"
