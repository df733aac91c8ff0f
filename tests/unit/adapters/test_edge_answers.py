"""Edge answers a button press or a pre-checkout query while the user waits: a failed answer is
tried twice more, Telegram's "too late" ends it, and an answer that never got through is said."""

from __future__ import annotations

from aiogram.exceptions import TelegramBadRequest, TelegramNetworkError
from aiogram.methods import AnswerCallbackQuery

from videocopies.adapters.telegram.receiver import _answered


class Telegram:
    def __init__(self, *answers: Exception | None) -> None:
        self.answers, self.calls = list(answers), 0

    async def answer(self) -> None:
        self.calls += 1
        if (failure := self.answers.pop(0) if self.answers else None) is not None:
            raise failure


def bad_gateway() -> Exception:
    return TelegramNetworkError(AnswerCallbackQuery(callback_query_id="q"), "502 Bad Gateway")


async def test_an_answer_that_failed_is_tried_again_until_it_gets_through() -> None:
    telegram = Telegram(bad_gateway(), bad_gateway(), None)
    assert await _answered(telegram.answer, "callback q") is True
    assert telegram.calls == 3


async def test_too_late_is_final_and_three_failures_lose_the_answer() -> None:
    late = Telegram(TelegramBadRequest(AnswerCallbackQuery(callback_query_id="q"), "query is too old"))
    assert await _answered(late.answer, "callback q") is True and late.calls == 1
    down = Telegram(bad_gateway(), bad_gateway(), bad_gateway(), None)
    assert await _answered(down.answer, "callback q") is False and down.calls == 3
