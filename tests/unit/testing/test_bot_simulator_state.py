"""The simulator's state and parameter parsing without HTTP, on the strict defaults: the update queue,
multipart, a first look at flood control."""

from __future__ import annotations

import asyncio
import threading

import pytest

from videocopies.testing.telegram_simulator import BotApiError, Settings, SimulatorState, UserActionRefused
from videocopies.testing.telegram_simulator.methods import call
from videocopies.testing.telegram_simulator.params import Params, Upload, parse
from videocopies.testing.telegram_simulator.users import create_user


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def state(clock, tmp_path):
    state = SimulatorState(Settings(), files_dir=tmp_path, clock=clock)
    yield state
    state.close()


def test_multipart_fields_and_attached_files():
    body = (
        b"--XyZ\r\nContent-Disposition: form-data; name=chat_id\r\n\r\n42\r\n"
        b"--XyZ\r\nContent-Disposition: form-data; name=video\r\n\r\nattach://f1\r\n"
        b'--XyZ\r\nContent-Disposition: form-data; name=f1; filename="a b.mp4"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n\x00\r\n--\x01\r\n"
        b"--XyZ--\r\n"
    )
    p = parse("", "multipart/form-data; boundary=XyZ", body)
    assert p.int("chat_id") == 42
    assert p.file("video") == Upload("a b.mp4", b"\x00\r\n--\x01")


def test_json_and_form_values_read_alike():
    form = parse("", "application/x-www-form-urlencoded", b'chat_id=7&reply_markup={"a":1}&ok=true')
    body = parse("", "application/json", b'{"chat_id": 7, "reply_markup": {"a": 1}, "ok": true}')
    for p in (form, body):
        assert (p.int("chat_id"), p.json("reply_markup"), p.bool("ok")) == (7, {"a": 1}, True)
    with pytest.raises(BotApiError, match="invalid parameter chat_id"):
        Params({"chat_id": "x"}).int("chat_id")


async def test_a_chat_takes_a_burst_then_one_a_second_and_the_bot_thirty(state, clock):
    """The strict defaults; test_sim_flood.py has the buckets and windows in detail."""
    bot = state.create_bot()
    users = [create_user(state, bot) for _ in range(12)]
    for user in users:
        user.send_text("hi")
    one = Params({"chat_id": users[0].id, "text": "x"})
    for _ in range(3):
        await call(state, bot.token, "sendMessage", one)
    with pytest.raises(BotApiError) as limited:
        await call(state, bot.token, "sendMessage", one)
    assert (limited.value.error_code, limited.value.retry_after) == (429, 1)
    clock.now += 1.0
    await call(state, bot.token, "sendMessage", one)
    for user in [u for u in users[1:11] for _ in range(3)][:29]:  # with the one above: 30 this second
        await call(state, bot.token, "sendMessage", Params({"chat_id": user.id, "text": "y"}))
    with pytest.raises(BotApiError, match="Too Many Requests: retry after 1"):
        await call(state, bot.token, "sendMessage", Params({"chat_id": users[11].id, "text": "z"}))


async def test_offset_confirms_and_negative_offset_keeps_the_last(state):
    bot = state.create_bot()
    user = create_user(state, bot)
    for text in "abcd":
        user.send_text(text)
    first = await call(state, bot.token, "getUpdates", Params({"limit": 2}))
    assert [u["message"]["text"] for u in first] == ["a", "b"]
    rest = await call(state, bot.token, "getUpdates", Params({"offset": first[-1]["update_id"] + 1}))
    assert [u["message"]["text"] for u in rest] == ["c", "d"]
    last = await call(state, bot.token, "getUpdates", Params({"offset": -1}))
    assert [u["message"]["text"] for u in last] == ["d"]


async def test_allowed_updates_drop_other_kinds(state):
    bot = state.create_bot()
    user = create_user(state, bot)
    await call(state, bot.token, "getUpdates", Params({"allowed_updates": '["callback_query"]'}))
    user.send_text("ignored")
    assert await call(state, bot.token, "getUpdates", Params()) == []


async def test_a_long_poll_wakes_for_an_update_from_another_thread(state):
    bot = state.create_bot()
    user = create_user(state, bot)
    poll = asyncio.create_task(call(state, bot.token, "getUpdates", Params({"timeout": 5})))
    await asyncio.sleep(0.05)
    threading.Thread(target=user.send_text, args=("hello",)).start()
    (update,) = await asyncio.wait_for(poll, 2)
    assert update["message"]["text"] == "hello"


async def test_pressing_needs_a_bot_message_with_that_button(state):
    bot = state.create_bot()
    user = create_user(state, bot)
    mine = user.send_text("hi")
    with pytest.raises(UserActionRefused):
        user.press(mine["message_id"], "x")


async def test_same_content_same_unique_id_new_file_id(state):
    one = state.files.add(b"abc", kind="video")
    two = state.files.add(b"abc", kind="video")
    other = state.files.add(b"abd", kind="video")
    assert one.file_unique_id == two.file_unique_id != other.file_unique_id
    assert one.file_id != two.file_id


async def test_unknown_method_and_token(state):
    bot = state.create_bot()
    with pytest.raises(BotApiError) as unknown:
        await call(state, bot.token, "sendUnicorn", Params())
    assert (unknown.value.error_code, unknown.value.description) == (404, "Not Found")
    with pytest.raises(BotApiError) as stranger:
        await call(state, "1:nope", "getMe", Params())
    assert stranger.value.to_json() == {"ok": False, "error_code": 401, "description": "Unauthorized"}
