"""The embedded HAProxy the two-core tests start: a request never fails because one backend
is gone (it goes to the other), a drained backend gets no new request, and a missing binary
is said plainly."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator

import httpx
import pytest

from videocopies.embedded.haproxy import LocalHaproxy, haproxy_binary, server_name
from videocopies.embedded.local import LocalServerError, free_port

from .harness import wait_for


class _Port(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the standard library's name
        body = str(self.server.server_address[1]).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


@contextlib.contextmanager
def _backend() -> Iterator[http.server.ThreadingHTTPServer]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), _Port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def installed() -> None:
    try:
        haproxy_binary()
    except LocalServerError as missing:
        pytest.skip(str(missing))


def test_a_request_goes_to_the_live_backend_and_a_drained_one_gets_none(installed: None) -> None:
    with _backend() as one, _backend() as two:
        ports = [one.server_address[1], two.server_address[1]]
        with LocalHaproxy([f"127.0.0.1:{port}" for port in ports]) as balancer:
            wait_for(lambda: set(balancer.states().values()) == {"UP"}, 10)
            answered = {int(httpx.get(f"{balancer.http_url}/x", timeout=5).text) for _ in range(4)}
            assert answered == set(ports)  # round robin
            balancer.set_state(1, "drain")
            assert {int(httpx.get(f"{balancer.http_url}/x", timeout=5).text) for _ in range(4)} == {ports[1]}
            balancer.set_state(1, "ready")
            two.shutdown()
            two.server_close()  # gone, and not yet marked down: every request still gets through
            codes = [httpx.get(f"{balancer.http_url}/x", timeout=5) for _ in range(6)]
            assert {(c.status_code, int(c.text)) for c in codes} == {(200, ports[0])}
            wait_for(lambda: balancer.states()[server_name(2)].startswith("DOWN"), 10)


def test_a_missing_haproxy_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIDEOCOPIES_HAPROXY", "/nonexistent/haproxy")
    with pytest.raises(LocalServerError, match="VIDEOCOPIES_HAPROXY=/nonexistent/haproxy"):
        LocalHaproxy(["127.0.0.1:1"]).start()
