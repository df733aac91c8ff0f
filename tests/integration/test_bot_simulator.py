"""The Bot API simulator seen through the real aiogram `Bot` over HTTP, as the edge role sees Telegram.

Every simulator here runs the strict profile (Telegram's flood control, 502s and slow answers) unless
a test says why not. Fault draws follow the order of calls from a fixed seed, so a test that makes the
same calls meets the same faults every run; one whose number of calls depends on timing retries 502s
as any client must."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator

import httpx
import pytest
from aiogram import Bot, Dispatcher
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.exceptions import (
    TelegramBadRequest,
    TelegramConflictError,
    TelegramEntityTooLarge,
    TelegramForbiddenError,
    TelegramRetryAfter,
    TelegramServerError,
    TelegramUnauthorizedError,
)
from aiogram.filters import CommandStart
from aiogram.types import (
    BufferedInputFile,
    CallbackQuery,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    LabeledPrice,
    Message,
)
from aiohttp import web

from videocopies.testing.telegram_simulator import BotApiSimulator, UserActionRefused

MB = 1024 * 1024
QUERY_TOO_OLD = "Bad Request: query is too old and response timeout expired or query ID is invalid"


def keyboard(*data: str) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup(inline_keyboard=[[InlineKeyboardButton(text=d, callback_data=d) for d in data]])


def aiogram_bot(sim: BotApiSimulator, token: str | None = None) -> Bot:
    return Bot(token or sim.create_bot(), session=AiohttpSession(api=sim.api_server()))


@pytest.fixture
async def sim() -> AsyncIterator[BotApiSimulator]:
    async with BotApiSimulator(callback_deadline=0.6, pre_checkout_deadline=0.6) as simulator:
        yield simulator


@pytest.fixture
async def bot(sim: BotApiSimulator) -> AsyncIterator[Bot]:
    bot = aiogram_bot(sim)
    yield bot
    await bot.session.close()


async def next_updates(bot: Bot, offset: int = 0, timeout: int = 2):
    return await bot.get_updates(offset=offset, timeout=timeout)


async def test_get_me_describes_the_bot(sim, bot):
    me = await bot.get_me()
    assert me.is_bot and me.id == bot.id and me.username


async def test_unknown_token_and_unknown_method(sim):
    stranger = Bot("123:not-a-known-token", session=AiohttpSession(api=sim.api_server()))
    with pytest.raises(TelegramUnauthorizedError):
        await stranger.get_me()
    await stranger.session.close()
    token = sim.create_bot()
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{sim.url}/bot{token}/noSuchMethod")
    assert response.status_code == 404
    assert response.json() == {"ok": False, "error_code": 404, "description": "Not Found"}


async def test_start_arrives_through_long_polling(sim, bot):
    user = sim.create_user(first_name="Ann", language_code="ru")
    poll = asyncio.create_task(bot.get_updates(timeout=5))
    await asyncio.sleep(0.1)
    assert not poll.done()
    user.send_text("/start")
    (update,) = await asyncio.wait_for(poll, 2)
    message = update.message
    assert message.text == "/start" and message.from_user.id == user.id
    assert message.from_user.language_code == "ru" and message.chat.type == "private"
    assert message.entities[0].type == "bot_command"
    assert await bot.get_updates(offset=update.update_id + 1) == []


async def test_a_second_poller_terminates_the_first(sim, bot):
    first = asyncio.create_task(bot.get_updates(timeout=5))
    await asyncio.sleep(0.1)
    second = asyncio.create_task(bot.get_updates(timeout=1))
    with pytest.raises(TelegramConflictError, match="terminated by other getUpdates request"):
        await first
    assert await second == []


async def test_the_bot_cannot_write_first(sim, bot):
    user = sim.create_user()
    with pytest.raises(TelegramForbiddenError, match="bot can't initiate conversation with a user"):
        await bot.send_message(user.id, "hello")


async def test_button_press_answered_in_time_and_late(sim, bot):
    user = sim.create_user()
    user.send_text("/start")
    sent = await bot.send_message(user.id, "Pick", reply_markup=keyboard("copies:5", "copies:10"))
    seen = await user.next_message(contains="Pick")
    assert seen.buttons == ["copies:5", "copies:10"]
    with pytest.raises(UserActionRefused):
        user.press(sent.message_id, "copies:1000")

    user.press(sent.message_id, "copies:5")
    updates = await next_updates(bot)
    query = updates[-1].callback_query
    assert query.data == "copies:5" and query.message.message_id == sent.message_id
    assert query.from_user.id == user.id
    assert await bot.answer_callback_query(query.id) is True

    user.press(sent.message_id, "copies:10")
    late = (await next_updates(bot, updates[-1].update_id + 1))[-1].callback_query
    await asyncio.sleep(0.7)
    with pytest.raises(TelegramBadRequest) as refused:
        await bot.answer_callback_query(late.id)
    assert refused.value.message == QUERY_TOO_OLD


async def test_callback_data_over_64_bytes_is_refused(sim, bot):
    user = sim.create_user()
    user.send_text("hi")
    with pytest.raises(TelegramBadRequest) as refused:
        await bot.send_message(user.id, "x", reply_markup=keyboard("a" * 65))
    assert refused.value.message == "Bad Request: BUTTON_DATA_INVALID"
    assert await bot.send_message(user.id, "x", reply_markup=keyboard("a" * 64))


async def test_edits_are_recorded_in_order(sim, bot):
    user = sim.create_user()
    user.send_text("hi")
    sent = await bot.send_message(user.id, "Working", reply_markup=keyboard("cancel"))
    await bot.edit_message_text("Done", chat_id=user.id, message_id=sent.message_id)
    await bot.edit_message_reply_markup(chat_id=user.id, message_id=sent.message_id, reply_markup=keyboard("again"))
    with pytest.raises(TelegramBadRequest, match="message is not modified"):
        await bot.edit_message_text("Done", chat_id=user.id, message_id=sent.message_id,
                                    reply_markup=keyboard("again"))
    assert [(r.kind, r.text, r.buttons) for r in user.received] == [
        ("new", "Working", ["cancel"]), ("edit", "Done", []), ("edit", "Done", ["again"]),
    ]
    assert [r.at for r in user.received] == sorted(r.at for r in user.received)
    assert user.message(sent.message_id)["text"] == "Done"


async def test_send_video_upload_then_reuse_by_file_id(sim, bot):
    user = sim.create_user()
    user.send_text("hi")
    data = os.urandom(200_000)
    first = await bot.send_video(user.id, BufferedInputFile(data, "copy1.mp4"), width=720, height=1280, duration=3)
    video = first.video
    assert (video.width, video.height, video.duration, video.file_size) == (720, 1280, 3, len(data))
    assert video.mime_type == "video/mp4"
    again = await bot.send_video(user.id, video.file_id)
    assert again.video.file_unique_id == video.file_unique_id
    same_bytes = await bot.send_document(user.id, BufferedInputFile(data, "copy1.mp4"))
    assert same_bytes.document.file_unique_id == video.file_unique_id
    assert same_bytes.document.file_id != video.file_id
    received = await user.next_message(media="video")
    assert user.download_video(received) == data
    with pytest.raises(TelegramBadRequest, match="wrong file identifier"):
        await bot.send_video(user.id, "BAACnot-a-file")


async def test_cloud_mode_downloads_up_to_20_mb(sim, bot):
    user = sim.create_user()
    small, big = os.urandom(300_000), os.urandom(21 * MB)
    user.send_video(small, width=640, height=360, duration=2, file_name="small.mp4")
    user.send_video(big, width=640, height=360, duration=60, file_name="big.mp4")
    first, second = await next_updates(bot)
    assert first.message.video.file_size == len(small) and first.message.video.file_name == "small.mp4"
    file = await bot.get_file(first.message.video.file_id)
    assert not file.file_path.startswith("/")
    assert (await bot.download(file)).read() == small
    with pytest.raises(TelegramBadRequest) as refused:
        await bot.get_file(second.message.video.file_id)
    assert refused.value.message == "Bad Request: file is too big"


async def test_cloud_mode_refuses_uploads_over_50_mb(sim, bot):
    user = sim.create_user()
    user.send_text("hi")
    with pytest.raises(TelegramEntityTooLarge):
        await bot.send_document(user.id, BufferedInputFile(b"\0" * (50 * MB + 1), "huge.bin"))


async def test_local_mode_serves_big_files_from_disk():
    async with BotApiSimulator(mode="local") as sim:
        bot = aiogram_bot(sim)
        user = sim.create_user()
        data = os.urandom(25 * MB)
        user.send_video(data, width=1080, height=1920, duration=30)
        (update,) = await next_updates(bot)
        file = await bot.get_file(update.message.video.file_id)
        assert os.path.isabs(file.file_path)
        assert (await bot.download(file, timeout=30)).read() == data
        await bot.session.close()


async def test_webhook_delivers_in_order_with_the_secret_and_retries(sim, bot):
    got: list[tuple[str | None, dict]] = []
    failures = iter([True])  # the first delivery fails once

    async def receive(request: web.Request) -> web.Response:
        if next(failures, False):
            return web.Response(status=500)
        got.append((request.headers.get("X-Telegram-Bot-Api-Secret-Token"), await request.json()))
        return web.Response()

    app = web.Application()
    app.router.add_post("/hook", receive)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    try:
        user = sim.create_user()
        assert await bot.set_webhook(f"http://127.0.0.1:{port}/hook", secret_token="s3cret")
        with pytest.raises(TelegramConflictError, match="webhook is active"):
            await bot.get_updates()
        for text in ("one", "two", "three"):
            user.send_text(text)
        for _ in range(100):
            if len(got) == 3:
                break
            await asyncio.sleep(0.05)
        assert [secret for secret, _ in got] == ["s3cret"] * 3
        assert [update["message"]["text"] for _, update in got] == ["one", "two", "three"]
        ids = [update["update_id"] for _, update in got]
        assert ids == sorted(ids)
        assert (await bot.get_webhook_info()).pending_update_count == 0
        assert await bot.delete_webhook()
        user.send_text("four")
        (update,) = await next_updates(bot)
        assert update.message.text == "four"
    finally:
        await runner.cleanup()


async def test_sending_too_fast_gets_429_and_again_inside_the_window(sim, bot):
    user, other = sim.create_user(), sim.create_user()
    user.send_text("hi")
    other.send_text("hi")
    for text in ("1", "2", "3"):  # a short burst is allowed
        await bot.send_message(user.id, text)
    with pytest.raises(TelegramRetryAfter) as limited:
        await bot.send_message(user.id, "4")
    assert limited.value.retry_after == 1
    assert "Too Many Requests: retry after 1" in limited.value.message
    with pytest.raises(TelegramRetryAfter):
        await bot.send_message(user.id, "5")
    await bot.send_message(other.id, "a window covers its chat only")
    await asyncio.sleep(1.0)
    await bot.send_message(user.id, "6")
    assert [e.text for e in user.received] == ["1", "2", "3", "6"]
    async with httpx.AsyncClient(base_url=f"{sim.url}/_sim") as control:
        stats = (await control.get("/stats")).json()
    assert (stats["refused_429"], stats["flood_violations"]) == (2, 1)


async def test_a_blocked_user_and_a_file_telegram_cannot_serve(sim, bot):
    user = sim.create_user()
    user.send_text("hi")
    await bot.send_message(user.id, "welcome")
    user.block()
    for _ in range(2):
        with pytest.raises(TelegramForbiddenError, match="bot was blocked by the user"):
            await bot.send_message(user.id, "your copy")
    assert sim.state.sends_after_blocked == 1
    user.send_video_ref("BAACgone")
    (update,) = [u for u in await next_updates(bot) if u.message.video]
    with pytest.raises(TelegramBadRequest) as refused:
        await bot.get_file(update.message.video.file_id)
    assert refused.value.message == "Bad Request: wrong file_id or the file is temporarily unavailable"


async def test_faults_on_the_quick_path_502_and_slow_answers_in_order():
    async with BotApiSimulator(fault_rate=1.0, slow_rate=0.0) as failing:
        bot = aiogram_bot(failing)
        user = failing.create_user()
        user.send_text("hi")
        with pytest.raises(TelegramServerError, match="Bad Gateway"):  # aiogram posts a form: through ASGI
            await bot.send_message(user.id, "lost")
        async with httpx.AsyncClient() as raw:  # JSON: answered in the HTTP protocol
            quick = await raw.post(f"{failing.url}/bot{bot.token}/sendMessage", json={"chat_id": user.id, "text": "x"})
        assert quick.status_code == 502
        assert quick.json() == {"ok": False, "error_code": 502, "description": "Bad Gateway"}
        assert user.received == [] and failing.state.faults == 2
        await bot.session.close()
    async with BotApiSimulator(fault_rate=0.0, slow_rate=1.0, slow_s=0.3, chat_burst=10) as slow:
        token = slow.create_bot()
        user = slow.create_user()
        user.send_text("hi")
        started = asyncio.get_running_loop().time()
        answers = await pipelined(slow, token, user.id, ["one", "two", "three"])
        assert asyncio.get_running_loop().time() - started >= 0.3
        assert answers.index(b'"text":"one"') < answers.index(b'"text":"two"') < answers.index(b'"text":"three"')
        assert slow.state.slow_answers == 3


async def test_stars_payment_and_refund(sim, bot):
    user = sim.create_user()
    user.send_text("/buy")
    (start,) = await next_updates(bot)
    invoice = await bot.send_invoice(
        user.id, title="10 coins", description="Coins for copies", payload="order-42", currency="XTR",
        prices=[LabeledPrice(label="10 coins", amount=25)],
    )
    assert invoice.invoice.total_amount == 25 and invoice.invoice.currency == "XTR"
    query_id = user.pay(invoice.message_id)
    (update,) = await next_updates(bot, start.update_id + 1)
    query = update.pre_checkout_query
    assert (query.id, query.invoice_payload, query.total_amount) == (query_id, "order-42", 25)
    assert await bot.answer_pre_checkout_query(query.id, ok=True)
    (paid,) = await next_updates(bot, update.update_id + 1)
    payment = paid.message.successful_payment
    assert payment.invoice_payload == "order-42" and payment.total_amount == 25
    assert (await user.payment_outcome(query_id))["outcome"] == "paid"

    (incoming,) = (await bot.get_star_transactions()).transactions
    assert incoming.id == payment.telegram_payment_charge_id and incoming.amount == 25
    assert incoming.source.user.id == user.id and incoming.source.invoice_payload == "order-42"
    assert await bot.refund_star_payment(user.id, payment.telegram_payment_charge_id)
    with pytest.raises(TelegramBadRequest, match="CHARGE_ALREADY_REFUNDED"):
        await bot.refund_star_payment(user.id, payment.telegram_payment_charge_id)
    transactions = (await bot.get_star_transactions(offset=1, limit=10)).transactions
    assert [(t.id, t.receiver.user.id) for t in transactions] == [(payment.telegram_payment_charge_id, user.id)]


async def test_successful_payment_can_be_dropped_or_duplicated(sim, bot):
    user = sim.create_user()
    user.send_text("/buy")
    offset = (await next_updates(bot))[-1].update_id + 1
    charges = {}
    for delivery in ("drop", "duplicate"):
        invoice = await bot.send_invoice(user.id, title="t", description="d", payload=delivery, currency="XTR",
                                         prices=[LabeledPrice(label="x", amount=1)])
        user.pay(invoice.message_id, successful_payment=delivery)
        (update,) = await next_updates(bot, offset)
        offset = update.update_id + 1
        await bot.answer_pre_checkout_query(update.pre_checkout_query.id, ok=True)
        updates = await bot.get_updates(offset=offset, timeout=0)
        offset = updates[-1].update_id + 1 if updates else offset
        charges[delivery] = [u.message.successful_payment.telegram_payment_charge_id for u in updates]
    assert charges["drop"] == []
    assert len(charges["duplicate"]) == 2 and len(set(charges["duplicate"])) == 1
    assert len((await bot.get_star_transactions()).transactions) == 2


async def test_pre_checkout_answered_too_late_fails(sim, bot):
    user = sim.create_user()
    user.send_text("/buy")
    invoice = await bot.send_invoice(user.id, title="t", description="d", payload="p", currency="XTR",
                                     prices=[LabeledPrice(label="x", amount=1)])
    query_id = user.pay(invoice.message_id)
    await asyncio.sleep(0.7)
    with pytest.raises(TelegramBadRequest) as refused:
        await bot.answer_pre_checkout_query(query_id, ok=True)
    assert refused.value.message == QUERY_TOO_OLD
    assert user.payment(query_id)["outcome"] == "expired"


async def test_concurrent_users_lose_and_repeat_no_update(sim, bot):
    users = [sim.create_user() for _ in range(20)]

    async def chatter(user) -> None:
        for i in range(10):
            await asyncio.to_thread(user.send_text, f"{user.id}:{i}")

    senders = asyncio.gather(*(chatter(u) for u in users))
    seen: list[str] = []
    offset = 0
    while len(seen) < 200:
        try:
            batch = await bot.get_updates(offset=offset, timeout=2, limit=7)
        except TelegramServerError:  # the strict profile's 502s: a poller asks again, losing nothing
            continue
        for update in batch:
            seen.append(update.message.text)
            offset = update.update_id + 1
    await senders
    assert sorted(seen) == sorted(f"{u.id}:{i}" for u in users for i in range(10))
    for u in users:  # each user's messages keep their order
        assert [t for t in seen if t.startswith(f"{u.id}:")] == [f"{u.id}:{i}" for i in range(10)]


async def test_http_control_endpoints_drive_a_user_from_outside():
    with BotApiSimulator() as sim:  # the server runs in its own thread, like a separate process
        token = sim.create_bot()
        bot = aiogram_bot(sim, token)
        async with httpx.AsyncClient(base_url=f"{sim.url}/_sim") as control:
            created = (await control.post("/users", json={"first_name": "Bo", "language_code": "de"})).json()
            uid = created["id"]
            assert created["bot_token"] == token
            assert (await control.post(f"/users/{uid}/messages", json={"text": "/start"})).status_code == 201
            (update,) = await next_updates(bot)
            assert update.message.text == "/start" and update.message.from_user.language_code == "de"

            sent = await bot.send_message(uid, "Send me a video", reply_markup=keyboard("help"))
            entry = (await control.get(f"/users/{uid}/received/next", params={"contains": "video"})).json()
            assert entry["message"]["message_id"] == sent.message_id and entry["kind"] == "new"
            refused = await control.post(f"/users/{uid}/presses", json={"message_id": sent.message_id, "data": "x"})
            assert refused.status_code == 409
            pressed = await control.post(f"/users/{uid}/presses", json={"message_id": sent.message_id, "data": "help"})
            (update,) = await next_updates(bot, update.update_id + 1)
            assert update.callback_query.id == pressed.json()["callback_query_id"]

            clip = os.urandom(50_000)
            posted = await control.post(f"/users/{uid}/videos", content=clip,
                                        params={"width": 480, "height": 854, "duration": 4, "file_name": "in.mp4"})
            (update,) = await next_updates(bot, update.update_id + 1)
            video = update.message.video
            assert (video.width, video.height, video.duration) == (480, 854, 4)
            assert video.file_id == posted.json()["video"]["file_id"]

            copy = await bot.send_video(uid, BufferedInputFile(clip[::-1], "copy.mp4"))
            waited = await control.get(f"/users/{uid}/received/next", params={"media": "video", "timeout": 2})
            assert waited.json()["message"]["message_id"] == copy.message_id
            downloaded = await control.get(f"/files/{copy.video.file_id}")
            assert downloaded.content == clip[::-1]
            timed_out = await control.get(f"/users/{uid}/received/next", params={"timeout": 0.1})
            assert timed_out.status_code == 408

            invoice = await bot.send_invoice(uid, title="t", description="d", payload="p", currency="XTR",
                                             prices=[LabeledPrice(label="x", amount=3)])
            paying = await control.post(f"/users/{uid}/payments", json={"message_id": invoice.message_id})
            query_id = paying.json()["pre_checkout_query_id"]
            (update,) = await next_updates(bot, update.update_id + 1)
            await bot.answer_pre_checkout_query(update.pre_checkout_query.id, ok=True)
            status = (await control.get(f"/users/{uid}/payments/{query_id}", params={"wait": 2})).json()
            assert status["outcome"] == "paid" and status["telegram_payment_charge_id"]
        await bot.session.close()


async def test_an_aiogram_dispatcher_polls_and_answers(sim, bot):
    dp = Dispatcher()

    @dp.message(CommandStart())
    async def welcome(message: Message) -> None:
        await message.answer(f"Welcome, {message.from_user.first_name}", reply_markup=keyboard("menu"))

    @dp.callback_query()
    async def pressed(query: CallbackQuery) -> None:
        await query.answer()
        await query.message.edit_text(f"You pressed {query.data}")

    polling = asyncio.create_task(dp.start_polling(bot, handle_signals=False, close_bot_session=False))
    try:
        user = sim.create_user(first_name="Cy")
        user.send_text("/start")
        welcome_seen = await user.next_message(contains="Welcome, Cy", timeout=5)
        user.press(welcome_seen.message_id, "menu")
        edited = await user.next_message(kind="edit", timeout=5)
        assert edited.text == "You pressed menu" and edited.message_id == welcome_seen.message_id
    finally:
        await dp.stop_polling()
        await polling


async def test_an_abandoned_long_poll_loses_no_update(sim, bot):
    user = sim.create_user()
    async with httpx.AsyncClient() as raw:
        abandoned = asyncio.create_task(raw.get(f"{sim.url}/bot{bot.token}/getUpdates", params={"timeout": 20}))
        await asyncio.sleep(0.1)
        abandoned.cancel()
    user.send_text("still here")
    (update,) = await next_updates(bot)
    assert update.message.text == "still here"


async def test_stats_count_polls(sim, bot):
    """What a load run watches: a poller is running once `polls` is above zero."""
    async with httpx.AsyncClient(base_url=f"{sim.url}/_sim") as control:
        assert (await control.get("/stats")).json() == {
            "delivered": 0, "users": 0, "polls": 0, "flood_violations": 0, "refused_429": 0,
            "sends_after_blocked": 0, "faults": 0, "slow_answers": 0, "sent_by_kind": {}, "not_modified": 0,
        }
        await next_updates(bot, timeout=0)
        await next_updates(bot, timeout=0)
        assert (await control.get("/stats")).json()["polls"] == 2


async def test_json_calls_answer_alike_in_the_protocol_and_through_asgi(sim, bot):
    """A JSON call to a quick method is answered inside the HTTP protocol; the same call through
    the ASGI app (as a GET with a query, or in-process) must get the same answer."""
    user = sim.create_user()
    user.send_text("/start")
    long_data = {"inline_keyboard": [[{"text": "x", "callback_data": "d" * 65}]]}
    calls = [
        (bot.token, "sendMessage", {"chat_id": user.id, "text": "hi"}),
        (bot.token, "sendMessage", {"chat_id": user.id, "text": "  "}),
        (bot.token, "sendMessage", {"chat_id": user.id, "text": "x", "reply_markup": long_data}),
        (bot.token, "sendMessage", {"chat_id": sim.create_user().id, "text": "first"}),
        (bot.token, "sendMessage", {"chat_id": 1, "text": "nobody"}),
        (bot.token, "answerCallbackQuery", {"callback_query_id": "no-such-query"}),
        (bot.token, "noSuchMethod", {}),
        ("123:unknown", "sendMessage", {"chat_id": user.id, "text": "hi"}),
    ]
    in_process = httpx.AsyncClient(transport=httpx.ASGITransport(app=sim.app), base_url="http://sim")
    async with httpx.AsyncClient(base_url=sim.url) as wire, in_process:
        for token, method, body in calls:
            quick = await wire.post(f"/bot{token}/{method}", json=body)
            routed = await in_process.post(f"/bot{token}/{method}", json=body)
            assert (quick.status_code, quick.headers["content-type"]) == (routed.status_code, "application/json")
            if quick.status_code == 200:
                sent, again = quick.json()["result"], routed.json()["result"]
                assert again["message_id"] == sent["message_id"] + 1
                assert {k: v for k, v in sent.items() if k != "message_id"} == {
                    k: v for k, v in again.items() if k not in ("message_id",)
                } | {"date": sent["date"]}
            else:
                assert quick.json() == routed.json() and quick.json()["ok"] is False
        bad = await wire.post(f"/bot{bot.token}/sendMessage", content=b"{not json",
                              headers={"content-type": "application/json"})
        assert bad.status_code == 400 and bad.json()["description"] == "Bad Request: can't parse JSON object"
        closing = await wire.post(f"/bot{bot.token}/sendMessage", json={"chat_id": user.id, "text": "bye"},
                                  headers={"connection": "close"})
        assert closing.status_code == 200 and closing.headers.get("connection") == "close"
    texts = [entry.message.get("text") for entry in user.received]
    assert texts.count("hi") == 2 and "bye" in texts


async def test_pipelined_json_calls_are_answered_in_order(sim, bot):
    """Two requests written at once on one connection: the answers come back in their order."""
    user = sim.create_user()
    user.send_text("/start")
    answers = await pipelined(sim, bot.token, user.id, ["one", "two", "three"])
    assert answers.index(b'"text":"one"') < answers.index(b'"text":"two"') < answers.index(b'"text":"three"')


async def pipelined(sim: BotApiSimulator, token: str, chat_id: int, texts: list[str]) -> bytes:
    """sendMessage calls written at once on one connection; the raw answers, once all have come."""
    bodies = [f'{{"chat_id": {chat_id}, "text": "{text}"}}'.encode() for text in texts]
    requests = b"".join(
        b"POST /bot" + token.encode() + b"/sendMessage HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body for body in bodies
    )
    reader, writer = await asyncio.open_connection(sim.host, sim.port)
    writer.write(requests)
    await writer.drain()
    answers = b""
    while answers.count(b'"ok":true') < len(texts):
        chunk = await asyncio.wait_for(reader.read(65536), 5)
        assert chunk, "the connection closed early"
        answers += chunk
    writer.close()
    return answers
