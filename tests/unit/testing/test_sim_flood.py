"""Telegram's limits as the simulator plays them by default, on an injected clock: flood control
(token buckets, the window a 429 opens), blocked users, late callback answers, text and button sizes."""

from __future__ import annotations

import pytest

from videocopies.testing.telegram_simulator import LAX, BotApiError, Settings, SimulatorState
from videocopies.testing.telegram_simulator.methods import call_now
from videocopies.testing.telegram_simulator.params import Params
from videocopies.testing.telegram_simulator.users import SimulatedUser, create_user

T0 = 1_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def make_state(clock, tmp_path):
    made: list[SimulatorState] = []

    def make(**settings) -> SimulatorState:
        made.append(SimulatorState(Settings(**settings), files_dir=tmp_path / str(len(made)), clock=clock))
        return made[-1]

    yield make
    for state in made:
        state.close()


@pytest.fixture
def state(make_state) -> SimulatorState:
    return make_state()


def started_users(state: SimulatorState, n: int) -> list[SimulatedUser]:
    bot = state.bots.get("7:strict") or state.create_bot("7:strict")
    users = [create_user(state, bot) for _ in range(n)]
    for user in users:
        user.send_text("/start")
    return users


def send(state: SimulatorState, user: SimulatedUser, method: str = "sendMessage", **fields) -> object:
    return call_now(state, user.bot.token, method, Params({"chat_id": user.id, "text": "x"} | fields))


def refused(state: SimulatorState, user: SimulatedUser, method: str = "sendMessage", **fields) -> BotApiError:
    with pytest.raises(BotApiError) as caught:
        send(state, user, method, **fields)
    return caught.value


def test_a_chat_takes_three_at_once_then_one_a_second(state, clock):
    (ann,) = started_users(state, 1)
    for _ in range(3):
        send(state, ann)
    first = refused(state, ann)
    assert first.to_json() == {"ok": False, "error_code": 429, "description": "Too Many Requests: retry after 1",
                               "parameters": {"retry_after": 1}}
    clock.now += 1.0  # the window has closed and one token is back, not more
    send(state, ann)
    assert refused(state, ann).retry_after == 1
    assert (state.refused_429, state.flood_violations) == (2, 0)


def test_a_bucket_refills_at_its_rate_up_to_its_burst(make_state, clock):
    state = make_state(chat_burst=2, chat_rate=0.4)
    (ann,) = started_users(state, 1)
    send(state, ann)
    send(state, ann)
    assert refused(state, ann).retry_after == 3  # 2.5 s until a token, in whole seconds
    clock.now += 60  # a long pause fills the bucket to its burst, no further
    send(state, ann)
    send(state, ann)
    assert refused(state, ann).retry_after == 3


def test_the_bot_takes_thirty_at_once_across_chats_then_thirty_a_second(state, clock):
    users = started_users(state, 11)
    for user in users[:10]:
        for _ in range(3):
            send(state, user)
    assert refused(state, users[10]).retry_after == 1
    clock.now += 1.0
    for user in users[:10]:  # 30 more: each chat got one token back, and the bot thirty
        send(state, user)
    assert state.sent_by_kind == {"sendMessage": 40}


def test_every_send_inside_an_open_window_is_refused_again_and_counted(state, clock):
    ann, bob = started_users(state, 2)
    for _ in range(3):
        send(state, ann)
    assert refused(state, ann).retry_after == 1
    clock.now += 0.5
    again = refused(state, ann)
    assert (again.error_code, again.retry_after) == (429, 1)  # the rest of the window, never 0
    send(state, bob)  # a chat's window covers that chat only
    clock.now += 0.5
    send(state, ann)  # the window was [t, t+1)
    assert (state.flood_violations, state.refused_429) == (1, 2)


def test_the_bots_window_covers_every_chat(make_state, clock):
    state = make_state(global_burst=2, global_rate=0.5)
    ann, bob = started_users(state, 2)
    send(state, ann)
    send(state, bob)
    assert refused(state, ann).retry_after == 2
    clock.now += 1.5
    assert refused(state, bob).retry_after == 1  # bob's chat has tokens, the bot's window is open
    video = state.files.add(b"clip", kind="video").file_id
    invoice = {"title": "t", "description": "d", "payload": "p", "currency": "XTR",
               "prices": [{"label": "x", "amount": 1}]}
    for method, fields in (("sendVideo", {"video": video}), ("sendDocument", {"document": video}),
                           ("sendInvoice", invoice)):
        assert refused(state, bob, method, **fields).error_code == 429
    assert state.flood_violations == 4
    clock.now += 0.5
    send(state, bob)


def test_none_means_no_limit_and_lax_turns_off_both_and_faults(make_state):
    state = make_state(chat_rate=None)
    (ann,) = started_users(state, 1)
    for _ in range(30):
        send(state, ann)
    assert refused(state, ann).error_code == 429  # the bot's 30 still hold
    lax = make_state(**LAX)
    (bob,) = started_users(lax, 1)
    for _ in range(500):
        send(lax, bob)
    assert (lax.refused_429, lax.draw_fault()) == (0, None)
    assert Settings.lax(mode="local") == Settings(mode="local", chat_rate=None, global_rate=None, fault_rate=0.0,
                                                  slow_rate=0.0)


def test_edits_are_not_counted_and_not_held_by_a_window(state):
    (ann,) = started_users(state, 1)
    sent = [send(state, ann) for _ in range(3)]
    refused(state, ann)
    edited = send(state, ann, "editMessageText", message_id=sent[0]["message_id"], text="edited")
    assert edited["text"] == "edited"
    assert state.flood_violations == 0


@pytest.mark.parametrize("settings", [
    {"chat_rate": 0}, {"global_rate": -1.0}, {"chat_burst": 0}, {"fault_rate": 1.5}, {"slow_rate": -0.1},
    {"fault_rate": 0.6, "slow_rate": 0.5}, {"slow_s": -1},
])
def test_settings_refuse_limits_that_mean_nothing(settings):
    with pytest.raises(ValueError):
        Settings(**settings)


def test_a_send_to_a_user_who_blocked_the_bot_after_being_told_is_counted(state):
    ann, bob = started_users(state, 2)
    sent = send(state, ann)
    ann.block()
    first = refused(state, ann)
    assert (first.error_code, first.description) == (403, "Forbidden: bot was blocked by the user")
    assert state.sends_after_blocked == 0  # the first 403 is how the bot learns it
    refused(state, ann)
    refused(state, ann, "sendVideo", video="any")
    refused(state, ann, "editMessageText", message_id=sent["message_id"], text="new")
    refused(state, ann, "sendChatAction", action="typing")
    assert state.sends_after_blocked == 4
    send(state, bob)
    ann.send_text("I'm back")  # writing again unblocks
    send(state, ann)
    ann.block()
    refused(state, ann)
    assert state.sends_after_blocked == 4  # a new block: the bot is told once more before it counts
    call_now(state, ann.bot.token, "deleteMessage", Params({"chat_id": ann.id, "message_id": sent["message_id"]}))
    assert state.sends_after_blocked == 4  # a deletion shows the user nothing


def test_a_callback_query_must_be_answered_within_15_seconds(state, clock):
    (ann,) = started_users(state, 1)
    menu = send(state, ann, reply_markup={"inline_keyboard": [[{"text": "a", "callback_data": "a"}]]})
    in_time, late = ann.press(menu["message_id"], "a"), ann.press(menu["message_id"], "a")
    clock.now += 14.9
    assert call_now(state, ann.bot.token, "answerCallbackQuery", Params({"callback_query_id": in_time})) is True
    clock.now += 0.2
    with pytest.raises(BotApiError) as too_old:
        call_now(state, ann.bot.token, "answerCallbackQuery", Params({"callback_query_id": late}))
    assert too_old.value.description == (
        "Bad Request: query is too old and response timeout expired or query ID is invalid"
    )


def test_text_caption_and_callback_data_sizes(make_state):
    state = make_state(**LAX)  # many sends to one chat: the sizes are the subject here, not the rate
    (ann,) = started_users(state, 1)
    assert len(send(state, ann, text="й" * 4096)["text"]) == 4096
    assert refused(state, ann, text="y" * 4097).description == "Bad Request: message is too long"
    assert refused(state, ann, "sendVideo", video="x", caption="c" * 1025).description == (
        "Bad Request: message caption is too long"
    )
    for data in ("", "я" * 33, "d" * 65):  # 1-64 bytes, not characters
        markup = {"inline_keyboard": [[{"text": "b", "callback_data": data}]]}
        assert refused(state, ann, reply_markup=markup).description == "Bad Request: BUTTON_DATA_INVALID"
    send(state, ann, reply_markup={"inline_keyboard": [[{"text": "b", "callback_data": "я" * 32}]]})
