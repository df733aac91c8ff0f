"""The bot's inbox, users and conversation: the same cases on the in-memory adapters, on
PostgreSQL and through PgBouncer."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from videocopies.adapters.screens import Screen, render
from videocopies.application import use_cases as uc
from videocopies.application.ports import BotUser, InboxEvent, StoredVideo
from videocopies.domain.jobs import CopyArtifact
from videocopies.domain.shared import UserId, WorkerId

from .chat import Chat
from .conftest import Backend

BOB = BotUser(UserId(8), "en", "Bob")
ANNA = BotUser(UserId(9), "ru", "Анна")


@pytest.fixture
def chat(backend: Backend) -> Chat:
    return Chat(backend)


async def test_an_order_through_the_conversation(chat: Chat) -> None:
    (welcome,) = await chat.send(ANNA, "text", text="/start")
    assert "На вашем счёте 50 монет" in welcome.text
    video = StoredVideo("f", 4_000_000, 10.0, 720, 1280, "video/mp4", "sources/9/1.mp4", "0" * 64)
    (choose,) = await chat.send(ANNA, "video", video=video)
    (quote,) = await chat.send(ANNA, "button", data=choose.buttons[0][1].data)  # 5 copies
    (confirmed,) = await chat.send(ANNA, "button", data=quote.buttons[0][0].data)
    assert "в резерве 20 монет" in confirmed.text
    cases: Any = chat.backend.cases
    (job,) = await cases.claim_job()(uc.ClaimJobCommand(WorkerId("w")))
    artifact = CopyArtifact(f"copies/{job.order_id}/0.mp4", 10, "a" * 64, 10.0, 720, 1280)
    await cases.checkpoint_copy()(uc.CheckpointCopyCommand(job.job_id, job.token, 0, artifact))
    (copy,) = await chat.received(ANNA)
    assert copy.text == "Копия 1 из 5" and copy.video_key == artifact.object_key
    (history,) = await chat.send(ANNA, "text", text="/history")
    assert "5 копий, делается" in history.text


async def test_an_update_stored_twice_is_handled_once(chat: Chat) -> None:
    now = chat.backend.clock.now()
    event = InboxEvent(900, BOB, "text", text="/help")
    assert await chat.inbox.add([event, InboxEvent(901, BOB, "text", text="/balance")], now) == 2
    assert await chat.inbox.add([event], now) == 0
    while await chat.processor.turn():
        pass
    assert len(await chat.received(BOB)) == 2


async def test_a_user_is_held_by_one_turn_and_comes_back_with_new_events(chat: Chat) -> None:
    now = chat.backend.clock.now()
    await chat.inbox.add([InboxEvent(1, BOB, "text", text="/help"), InboxEvent(2, ANNA, "text", text="/help")], now)
    async with chat.inbox.turn() as turn, chat.inbox.turn() as other:
        (one,), (two,) = await turn.claim(now, 1, 1), await other.claim(now, 5, 5)
        assert sorted([one.user.user_id, two.user.user_id]) == sorted([BOB.user_id, ANNA.user_id])
        async with chat.inbox.turn() as third:
            assert await third.claim(now, 5, 5) == []
        holder, bobs = (turn, one) if one.user == BOB else (other, two)
        holder.done([(bobs, [], "ok")])
        await holder.commit()
    await chat.inbox.add([InboxEvent(3, BOB, "text", text="/balance")], now)  # after the turn
    async with chat.inbox.turn() as turn:
        events = await turn.claim(now, 5, 5)
    assert [e.update_id for e in events] == [2, 3]  # nobody forgotten, the done one gone


async def test_the_users_video_and_language_are_remembered(chat: Chat) -> None:
    now = chat.backend.clock.now()
    assert await chat.users.remember(ANNA, now) is True
    assert await chat.users.remember(ANNA, now) is False
    assert await chat.users.language(ANNA.user_id) == "ru"
    # Through the inbox, as the bot has it: on PostgreSQL the source's object row comes with the
    # event (migration 0019), and a video without a stored object is no longer kept.
    video = StoredVideo("f", 4_000_000, 10.0, 720, 1280, "video/mp4", "sources/9/x.mp4", "0" * 64)
    await chat.send(ANNA, "video", video=video)
    assert await chat.users.source(ANNA.user_id) == video


async def test_a_message_marked_sent_is_no_longer_pending(chat: Chat) -> None:
    await chat.send(BOB, "text", text="/help")
    async with chat.backend.new_uow() as uow:
        ((message_id, message),) = await uow.outbox.pending(10)
        await uow.outbox.mark_sent(message_id)
        await uow.commit()
    async with chat.backend.new_uow() as uow:
        assert await uow.outbox.pending(10) == []


async def test_a_burst_of_start_is_answered_like_single_events(chat: Chat) -> None:
    """Thirty newcomers (one sending twice) and an old user in one turn: each newcomer gets
    the bonus once and its welcome says so; events handled again say nothing twice and
    grant nothing twice."""
    now = chat.backend.clock.now()
    await chat.send(BOB, "text", text="/start")  # an old user by now
    newcomers = [BotUser(UserId(100 + i), "ru" if i % 2 else "en", f"N{i}") for i in range(30)]
    events = [InboxEvent(1000 + i, user, "text", text="/start") for i, user in enumerate(newcomers)]
    events += [InboxEvent(2000, newcomers[0], "text", text="/start"), InboxEvent(2001, BOB, "text", text="/balance"),
               InboxEvent(2002, newcomers[1], "text", text="hello")]
    await chat.inbox.add(events, now)
    assert await chat.processor.turn() == len(events)
    said = await _screens(chat)
    first, again = said[newcomers[0].user_id]
    assert first.text.startswith("Hi, N0!") and "You have 50 coins." in first.text
    assert "welcome gift of 50 coins" in first.text and "gift" not in again.text
    welcome, unknown = said[newcomers[1].user_id]
    assert "На вашем счёте 50 монет" in welcome.text and "подарок" in welcome.text
    assert unknown == render("screen", {"screen": "unknown"}, "ru")
    (balance,) = said[BOB.user_id]
    assert balance.text.startswith("Available: 50 coins")
    for user in newcomers:
        assert await _available(chat, user) == 50
    # Handled again (a turn that died after granting, before marking done): nothing twice.
    await chat.inbox.add([InboxEvent(3000 + i, user, "text", text="/start") for i, user in enumerate(newcomers)], now)
    while await chat.processor.turn():
        pass
    said = await _screens(chat)
    for user in newcomers:
        assert await _available(chat, user) == 50
        (welcome,) = said[user.user_id]
        assert "gift" not in welcome.text and "подарок" not in welcome.text


class _FirstBatchFails:
    """GrantCoins whose first batch fails (the database went away), after the turn has
    already remembered its users; then it works again."""

    def __init__(self, real: Any) -> None:
        self.real, self.failed = real, False

    async def many(self, commands: Any, read: Any = ()) -> Any:
        if not self.failed:
            self.failed = True
            raise RuntimeError("server closed the connection unexpectedly")
        return await self.real.many(commands, read)

    async def __call__(self, command: Any) -> Any:
        return await self.real(command)


async def test_a_bulk_turn_that_fails_after_remembering_still_grants_the_start_bonus(chat: Chat) -> None:
    """The bulk turn remembers its users, then fails to grant; the users are handled again one
    event at a time. They are known by then, yet each still gets the bonus, once."""
    conversation = chat.backend.service.bot.conversation()  # type: ignore[attr-defined]
    conversation.grant_coins = _FirstBatchFails(conversation.grant_coins)
    newcomers = [BotUser(UserId(100 + i), "en", f"N{i}") for i in (20, 22, 24)]
    events = [InboxEvent(4000 + i, user, "text", text="/start") for i, user in enumerate(newcomers)]
    await chat.inbox.add(events, chat.backend.clock.now())
    while await chat.processor.turn():
        pass
    assert conversation.grant_coins.failed
    said = await _screens(chat)
    for user in newcomers:
        assert await _available(chat, user) == 50
        (welcome,) = said[user.user_id]
        assert "welcome gift of 50 coins" in welcome.text and "You have 50 coins." in welcome.text


async def test_a_user_with_a_button_among_texts_keeps_its_order(chat: Chat) -> None:
    now = chat.backend.clock.now()
    await chat.inbox.add([
        InboxEvent(10, ANNA, "text", text="/start"), InboxEvent(11, ANNA, "button", data="n:5"),
        InboxEvent(12, ANNA, "text", text="/balance"), InboxEvent(13, BOB, "text", text="/start"),
    ], now)
    while await chat.processor.turn():
        pass
    welcome, video_first, balance = await chat.received(ANNA)
    assert welcome.text.startswith("Привет, Анна!")
    assert video_first.text == "Сначала пришлите видео."
    assert balance.text.startswith("Доступно: 50 монет")


async def _screens(chat: Chat) -> dict[UserId, list[Screen]]:
    """Every user's new screens, by user."""
    async with chat.backend.new_uow() as uow:
        rows = [(i, m) for i, m in await uow.outbox.pending(10_000) if i > chat._seen]
    chat._seen = max([chat._seen, *(i for i, _ in rows)])
    languages = {u.user_id: u.language for u in (BOB, ANNA)}
    languages |= {UserId(100 + i): "ru" if i % 2 else "en" for i in range(30)}
    said: dict[UserId, list[Screen]] = {}
    for _, m in rows:
        said.setdefault(m.user_id, []).append(render(m.kind, m.payload, languages[m.user_id]))
    return said


async def _available(chat: Chat, user: BotUser) -> int:
    async with chat.backend.new_uow() as uow:
        account = await uow.accounts.get(user.user_id)
    assert account is not None
    return account.balance(chat.backend.clock.now()).available


async def test_a_video_still_fetching_holds_its_users_later_events_until_edge_completes_it(chat: Chat) -> None:
    """A press made while the video downloads is stored at once but handled after the video, in
    order; other users are served meanwhile; edge's completion frees the user."""
    now = chat.backend.clock.now()
    fetching = StoredVideo("f", 0, 0.0, 0, 0, "video/mp4", None, file_unique_id="u1", fetching=True)
    await chat.inbox.add([InboxEvent(700, BOB, "video", video=fetching),
                          InboxEvent(701, BOB, "text", text="/balance"),
                          InboxEvent(702, ANNA, "text", text="/help")], now)
    while await chat.processor.turn():
        pass
    assert len(await chat.received(ANNA)) == 1  # another user is served meanwhile
    assert await chat.inbox.fetching(10) and not [m for m in await chat.received(BOB)]
    (waiting,) = await chat.inbox.fetching(10)
    assert waiting.update_id == 700 and waiting.video.file_unique_id == "u1"

    fetched = StoredVideo("f", 4_000_000, 10.0, 720, 1280, "video/mp4", "sources/8/700.mp4", "0" * 64,
                          file_unique_id="u1", probed=True, fps=30.0)
    assert await chat.inbox.complete_video(700, BOB.user_id, fetched)
    assert not await chat.inbox.complete_video(700, BOB.user_id, fetched)  # once
    while await chat.processor.turn():
        pass
    choose, balance = await chat.received(BOB)
    assert choose.buttons and "Available" in balance.text  # the video first, then the press behind it
    assert await chat.inbox.fetching(10) == []


async def test_a_file_that_never_comes_is_given_up_after_the_fetch_timeout(chat: Chat) -> None:
    now = chat.backend.clock.now()
    fetching = StoredVideo("f", 0, 0.0, 0, 0, "video/mp4", None, fetching=True)
    await chat.inbox.add([InboxEvent(710, BOB, "video", video=fetching)], now)
    while await chat.processor.turn():
        pass
    assert await chat.received(BOB) == []
    chat.backend.clock.advance(timedelta(minutes=11))
    while await chat.processor.turn():
        pass
    (unavailable,) = await chat.received(BOB)
    assert not unavailable.buttons and "send it again" in unavailable.text.lower()


async def test_a_user_held_for_a_payment_is_left_alone_until_named_or_the_hold_ends(chat: Chat) -> None:
    now = chat.backend.clock.now()
    await chat.inbox.add([InboxEvent(1, BOB, "text", text="/help")], now)
    async with chat.inbox.turn() as turn:
        assert len(await turn.claim(now, 5, 5)) == 1
        turn.hold([BOB.user_id], now + timedelta(seconds=30))
        await turn.commit()
    async with chat.inbox.turn() as other:
        assert await other.claim(now, 5, 5) == []  # held past the turn that holds it
    async with chat.inbox.turn() as named:
        assert [e.update_id for e in await named.claim(now, 1, 1, [BOB.user_id])] == [1]
        await named.commit()  # taken back: held no more
    async with chat.inbox.turn() as later:
        assert [e.update_id for e in await later.claim(now, 5, 5)] == [1]
