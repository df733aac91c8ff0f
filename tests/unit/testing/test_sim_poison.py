"""Poison for tests: any update Telegram could deliver or an odd client could make it deliver,
button presses with data no message carries, videos the Bot API can no longer serve."""

from __future__ import annotations

import httpx
import pytest

from videocopies.testing.telegram_simulator import LAX, BotApiError, Settings, SimulatorState, create_app
from videocopies.testing.telegram_simulator.methods import call, call_now
from videocopies.testing.telegram_simulator.params import Params, Upload
from videocopies.testing.telegram_simulator.users import create_user

MB = 1024 * 1024
UNAVAILABLE = "Bad Request: wrong file_id or the file is temporarily unavailable"


@pytest.fixture
def state(tmp_path):
    state = SimulatorState(Settings(), files_dir=tmp_path)
    yield state
    state.close()


async def updates(state: SimulatorState, token: str, **fields) -> list[dict]:
    return await call(state, token, "getUpdates", Params(fields))


async def test_a_raw_update_is_delivered_as_given_with_its_update_id(state):
    bot = state.create_bot()
    odd = {"message_id": -1, "date": 2**40, "chat": {"id": "not a number"}, "text": "\x00" * 5000}
    first = state.push_raw(bot, "message", odd)
    second = state.push_raw(bot, "edited_message", ["not", "an", "object"])
    assert second.update_id == first.update_id + 1
    assert await updates(state, bot.token) == [
        {"update_id": first.update_id, "message": odd},
        {"update_id": second.update_id, "edited_message": ["not", "an", "object"]},
    ]
    with pytest.raises(ValueError):
        state.push_raw(bot, "update_id", {})


async def test_a_raw_update_of_a_kind_the_bot_did_not_ask_for_is_not_delivered(state):
    bot = state.create_bot()
    user = create_user(state, bot)
    assert user.send_raw("chat_member", {"chat": {}}) is None  # not among Telegram's default kinds
    assert user.send_raw("message_reaction", {}) is None
    await updates(state, bot.token, allowed_updates=["message", "message_reaction"])
    assert user.send_raw("callback_query", {"id": "1"}) is None
    reaction = user.send_raw("message_reaction", {"chat": {"id": user.id}})
    assert [u["update_id"] for u in await updates(state, bot.token)] == [reaction]


async def test_a_button_no_message_carries_can_be_pressed_and_answered(state):
    bot = state.create_bot()
    user = create_user(state, bot)
    user.send_text("/start")
    menu = call_now(state, bot.token, "sendMessage", Params({"chat_id": user.id, "text": "menu"}))
    queries = [
        user.press_raw("\x00copies:5"),
        user.press_raw("x" * 100, message_id=menu["message_id"]),
        user.press_raw(None, message_id=999),
    ]
    got = [u["callback_query"] for u in (await updates(state, bot.token))[1:]]
    assert [q["id"] for q in got] == queries
    assert got[0]["data"] == "\x00copies:5" and "message" not in got[0] and got[0]["inline_message_id"]
    assert got[1]["data"] == "x" * 100 and got[1]["message"] == menu
    assert "data" not in got[2]
    assert got[2]["message"] == {"chat": user.profile.chat_json(), "message_id": 999, "date": 0}  # inaccessible
    for query_id in queries:
        assert call_now(state, bot.token, "answerCallbackQuery", Params({"callback_query_id": query_id}))


async def test_getfile_for_a_video_telegram_cannot_serve(state):
    bot = state.create_bot()
    user = create_user(state, bot)
    sent = user.send_video_ref("BAACgone", "AgADgone1", duration=30)
    (update,) = await updates(state, bot.token)
    assert update["message"]["video"] == sent["video"]
    assert sent["video"]["file_unique_id"] == "AgADgone1" and sent["video"]["duration"] == 30
    for file_id in ("BAACgone", "BAAC" + "z" * 40):
        with pytest.raises(BotApiError) as refused:
            call_now(state, bot.token, "getFile", Params({"file_id": file_id}))
        assert (refused.value.error_code, refused.value.description) == (400, UNAVAILABLE)


@pytest.mark.parametrize(("mode", "too_big"), [("cloud", True), ("local", False)])
async def test_getfile_over_20_mb_is_too_big_only_in_the_cloud(tmp_path, mode, too_big):
    state = SimulatorState(Settings(mode=mode), files_dir=tmp_path)
    bot = state.create_bot()
    big = state.files.add(b"\0" * (20 * MB + 1), kind="video")
    small = state.files.add(b"\0" * (20 * MB), kind="video")
    assert call_now(state, bot.token, "getFile", Params({"file_id": small.file_id}))["file_size"] == 20 * MB
    if too_big:
        with pytest.raises(BotApiError) as refused:
            call_now(state, bot.token, "getFile", Params({"file_id": big.file_id}))
        assert refused.value.description == "Bad Request: file is too big"
    else:
        assert call_now(state, bot.token, "getFile", Params({"file_id": big.file_id}))["file_path"]
    state.close()


async def test_poison_over_http(tmp_path):
    state = SimulatorState(Settings(**LAX), files_dir=tmp_path)  # no faults: each control call's answer is checked
    bot = state.create_bot()
    user = create_user(state, bot)
    transport = httpx.ASGITransport(app=create_app(state))
    async with httpx.AsyncClient(transport=transport, base_url="http://sim/_sim") as control:
        pushed = await control.post("/updates", json={"bot_token": bot.token, "kind": "message", "payload": {"x": 1}})
        assert pushed.status_code == 201
        dropped = await control.post("/updates", json={"kind": "chat_member", "payload": {}})
        assert (dropped.status_code, dropped.json()) == (200, {"update_id": None})
        assert (await control.post("/updates", json={"kind": "update_id", "payload": 1})).status_code == 400
        assert (await control.post("/updates", json={"bot_token": "9:nobody", "kind": "message"})).status_code == 404
        pressed = await control.post(f"/users/{user.id}/raw_presses", json={"data": "\x00" * 3})
        assert (await control.post(f"/users/{user.id}/raw_presses", json={"data": 5})).status_code == 400
        video = await control.post(f"/users/{user.id}/video_refs", json={"file_id": "BAACgone", "duration": 1800})
    got = await updates(state, bot.token)
    assert got[0] == {"update_id": pushed.json()["update_id"], "message": {"x": 1}}
    assert got[1]["callback_query"]["id"] == pressed.json()["callback_query_id"]
    assert got[1]["callback_query"]["data"] == "\x00\x00\x00"
    assert got[2]["message"]["video"]["file_id"] == "BAACgone" == video.json()["video"]["file_id"]
    assert got[2]["message"]["video"]["duration"] == 1800
    state.close()


@pytest.mark.parametrize(("mode", "refused"), [("cloud", True), ("local", False)])
async def test_uploads_over_50_mb_are_too_large_only_in_the_cloud(tmp_path, mode, refused):
    state = SimulatorState(Settings(mode=mode), files_dir=tmp_path)
    bot = state.create_bot()
    user = create_user(state, bot)
    user.send_text("/start")
    upload = Params({"chat_id": user.id}, {"document": Upload("copy.mp4", b"\0" * (50 * MB + 1))})
    if refused:
        with pytest.raises(BotApiError) as too_large:
            call_now(state, bot.token, "sendDocument", upload)
        assert (too_large.value.error_code, too_large.value.description) == (413, "Request Entity Too Large")
    else:
        assert call_now(state, bot.token, "sendDocument", upload)["document"]["file_size"] == 50 * MB + 1
    state.close()
