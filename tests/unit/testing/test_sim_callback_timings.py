"""The simulator tells a load run when each button press was made and when the bot answered it."""

from __future__ import annotations

import httpx

from videocopies.testing.telegram_simulator import Settings, SimulatorState, create_app
from videocopies.testing.telegram_simulator.methods import call_now
from videocopies.testing.telegram_simulator.params import Params
from videocopies.testing.telegram_simulator.users import create_user


class Clock:
    now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_each_press_is_listed_with_when_it_was_made_and_answered(tmp_path):
    clock = Clock()
    state = SimulatorState(Settings(), files_dir=tmp_path, clock=clock)
    bot = state.create_bot()
    ann, bob = create_user(state, bot), create_user(state, bot)
    markup = {"inline_keyboard": [[{"text": "a", "callback_data": "a"}]]}
    pressed = {}
    for user in (ann, bob):
        user.send_text("/start")
        fields = {"chat_id": user.id, "text": "m", "reply_markup": markup}
        menu = call_now(state, bot.token, "sendMessage", Params(fields))
        pressed[user.id] = user.press(menu["message_id"], "a")
    clock.now += 0.25
    call_now(state, bot.token, "answerCallbackQuery", Params({"callback_query_id": pressed[ann.id]}))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(state)), base_url="http://sim") as sim:
        everyone = (await sim.get("/_sim/callback_queries")).json()["callback_queries"]
        only_bob = (await sim.get("/_sim/callback_queries", params={"users": str(bob.id)})).json()["callback_queries"]
    state.close()
    assert sorted(everyone, key=lambda q: q["user_id"] != ann.id) == [
        {"id": pressed[ann.id], "user_id": ann.id, "pressed_at": 1_000_000.0, "answered_at": 1_000_000.25,
         "text": None},
        {"id": pressed[bob.id], "user_id": bob.id, "pressed_at": 1_000_000.0, "answered_at": None, "text": None},
    ]
    assert only_bob == [{"id": pressed[bob.id], "user_id": bob.id, "pressed_at": 1_000_000.0, "answered_at": None,
                         "text": None}]
