"""The order's progress message in the user's language: the conversation and the use cases run
on the in-memory service, and the message is drawn as edge draws it, from the newest outbox row
that edits it (a state of the order, or its end)."""

from __future__ import annotations

from typing import Any

import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from videocopies.adapters.screens import Screen, render
from videocopies.application import use_cases as uc
from videocopies.domain.shared import WorkerId

from .shop import USER, Shop, artifact
from .test_screens import presses_confirm, sends_and_chooses, speaks, telegram  # noqa: F401 - its fixture

scenarios("screens/progress.feature")

# The conversation's steps, as test_screens speaks them (a step is registered where it is declared).
given(parsers.parse("the user's Telegram speaks {language}"))(speaks)
when(parsers.parse("the user sends a video and chooses {copies:d} from the offered numbers of copies"))(
    sends_and_chooses
)
when("the user presses the confirm button")(presses_confirm)

WORKER = WorkerId("A")


@pytest.fixture
def held() -> dict[str, Any]:
    """The job the worker holds."""
    return {}


def progress_message(shop: Shop) -> Screen:
    language = shop.run(shop.service.gateways.bot_users().language(USER))
    rows = [m for _, m in sorted(shop.store.outbox.items())
            if m.user_id == USER and m.kind in ("progress", "order_closed")]
    return render(rows[-1].kind, rows[-1].payload, language)


def worker_at(shop: Shop, held: dict[str, Any], copy: int, percent: int) -> None:
    job = held["job"]
    shop.run(shop.cases.report_progress()(uc.ReportProgressCommand(job.job_id, job.token, copy - 1, percent, WORKER)))


@when(parsers.parse("copy {delivered:d} is delivered and the worker is {percent:d}% through copy {copy:d}"))
def delivered_and_rendering(shop: Shop, held: dict[str, Any], delivered: int, percent: int, copy: int) -> None:
    async def deliver() -> None:
        (held["job"],) = await shop.cases.claim_job()(uc.ClaimJobCommand(WORKER))
        job = held["job"]
        for index in range(delivered):
            await shop.cases.checkpoint_copy()(uc.CheckpointCopyCommand(
                job.job_id, job.token, index, artifact(shop, index + 1, "A"), WORKER))
            await shop.cases.record_delivery()(uc.RecordDeliveryCommand(shop.order_id, index))

    shop.run(deliver())
    worker_at(shop, held, copy, percent)


@when(parsers.parse("the worker is {percent:d}% through copy {copy:d}"))
def rendering(shop: Shop, held: dict[str, Any], percent: int, copy: int) -> None:
    worker_at(shop, held, copy, percent)


@when("the user cancels the order and the worker stops")
def cancelled(shop: Shop, held: dict[str, Any]) -> None:
    async def cancel() -> None:
        await shop.cases.cancel_order()(uc.CancelOrderCommand(USER, shop.order_id))
        await shop.cases.acknowledge_cancel()(held["job"].job_id, held["job"].token, WORKER)

    shop.run(cancel())


@then("the progress message reads:")
def reads(shop: Shop, docstring: str) -> None:
    assert progress_message(shop).text == docstring


@then(parsers.parse('the progress message still shows "{words}"'))
def shows(shop: Shop, words: str) -> None:
    assert words in progress_message(shop).text.splitlines()


@then(parsers.parse('the progress message has the button "{label}"'))
def has_button(shop: Shop, label: str) -> None:
    assert [b.text for row in progress_message(shop).buttons for b in row] == [label]


@then("the progress message has no button")
def no_button(shop: Shop) -> None:
    assert progress_message(shop).buttons == ()
