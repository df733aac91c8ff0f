"""The Bot API's JSON calls answered inside uvicorn's HTTP protocol, before any ASGI.

A load run sends the simulator tens of thousands of sendMessage and answerCallbackQuery
calls, on the same machine as the system it measures. Through ASGI each one costs a task,
a scope and two writes; here it is parsed, answered under the state's lock and written back
in one piece, as the method itself is quick. Everything else (getUpdates' long poll, the
webhook methods, uploads, downloads, the control endpoints) and any request this path is
unsure of go through ASGI as before, so both paths answer alike (tests drive both).

Injected faults are drawn here once the headers say the call is quick: a 502 is answered here
too, while a call drawn to be slow is handed to ASGI, which can wait without holding up the
protocol (and uvicorn keeps pipelined answers in order there)."""

from __future__ import annotations

import json
from collections.abc import Callable

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from videocopies.testing.telegram_simulator import methods, params
from videocopies.testing.telegram_simulator.errors import BAD_GATEWAY_ANSWER, BotApiError
from videocopies.testing.telegram_simulator.state import BAD_GATEWAY, SLOW, SimulatorState

Answer = Callable[[str, str, bytes], tuple[int, bytes]]
SLOW_CALL = "videocopies.simulator.slow"  # the ASGI scope key of a call the fast path drew as slow
_FAILED = ("", "")  # `_quick` of a call drawn to fail: answered 502 without reading it


def bot_call(path: str) -> tuple[str, str] | None:
    """(token, method) for a Bot API path, `/bot{token}/{method}`; None for any other."""
    if not path.startswith("/bot"):
        return None
    token, _, method = path[4:].partition("/")
    if not token or not method or "/" in method:
        return None
    return token, method


def json_body(payload: object) -> bytes:
    return json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


BAD_GATEWAY_BODY = json_body(BAD_GATEWAY_ANSWER)


def answerer(state: SimulatorState) -> Answer:
    """Status and JSON body for a quick method called with a JSON body."""

    def answer(token: str, method: str, body: bytes) -> tuple[int, bytes]:
        try:
            result = methods.call_now(state, token, method, params.parse("", "application/json", body))
        except BotApiError as e:
            return e.error_code, json_body(e.to_json())
        return 200, json_body({"ok": True, "result": result})

    return answer


def protocol_for(state: SimulatorState) -> type[HttpToolsProtocol]:
    """uvicorn's `http` protocol class, answering this state's quick calls itself."""
    draw_fault = state.draw_fault if state.settings.fault_rate or state.settings.slow_rate else None
    return type("SimulatorHttpProtocol", (QuickBotApiProtocol,), {
        "answer": staticmethod(answerer(state)), "draw_fault": staticmethod(draw_fault),
    })


class QuickBotApiProtocol(HttpToolsProtocol):
    answer: Answer
    draw_fault: Callable[[], str | None] | None

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._quick: tuple[str, str] | None = None
        self._quick_body: list[bytes] = []

    def on_headers_complete(self) -> None:
        self._quick = self._quick_call()
        if self._quick is not None and self.draw_fault is not None:
            fault = self.draw_fault()
            if fault == BAD_GATEWAY:
                self._quick = _FAILED
            elif fault == SLOW:
                self._quick = None
                self.scope[SLOW_CALL] = True
        if self._quick is None:
            super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if self._quick is not None:
            self._quick_body.append(body)
        else:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if self._quick is None:
            super().on_message_complete()
            return
        if self._quick is _FAILED:
            status, body = 502, BAD_GATEWAY_BODY
        else:
            status, body = self.answer(*self._quick, b"".join(self._quick_body))
        self._quick, self._quick_body = None, []
        keep_alive = self.parser.should_keep_alive()
        head = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            head += [name, b": ", value, b"\r\n"]
        head += [b"content-type: application/json\r\ncontent-length: ", str(len(body)).encode(), b"\r\n"]
        if not keep_alive:
            head.append(b"connection: close\r\n")
        head += [b"\r\n", body]
        self.transport.write(b"".join(head))
        self.server_state.total_requests += 1
        if not keep_alive:
            self.transport.close()
        elif not self.transport.is_closing():
            self.timeout_keep_alive_task = self.loop.call_later(
                self.timeout_keep_alive, self.timeout_keep_alive_handler
            )

    def _quick_call(self) -> tuple[str, str] | None:
        """A POST of JSON to a quick Bot API method, with no earlier request still being
        answered on this connection (answers keep their order)."""
        if self.parser.get_method() != b"POST" or self.parser.should_upgrade():
            return None
        if self.cycle is not None and not self.cycle.response_complete:
            return None
        if self.parser.get_http_version() != "1.1" or self.expect_100_continue:
            return None
        url = httptools.parse_url(self.url)
        if url.query or b"%" in url.path:
            return None
        call = bot_call(url.path.decode("ascii", "replace"))
        if call is None or call[1].lower() in methods.WAITING:
            return None
        content_type = next((v for k, v in self.headers if k == b"content-type"), b"")
        if content_type.split(b";", 1)[0].strip().lower() != b"application/json":
            return None
        return call
