"""Jobs: leases fenced by owner tokens, resumable copies, and reports answered once."""

from __future__ import annotations

from pytest_bdd import parsers, scenarios, then, when

from videocopies.application import use_cases as uc
from videocopies.domain.jobs import CopiesMissing
from videocopies.domain.shared import WorkerId

from .shop import Shop, artifact, checks_refusal, copy_numbers, looks

scenarios("jobs")


@when(parsers.parse('worker "{name}" reports copy {number:d} as rendered'))
def reports_copy(shop: Shop, name: str, number: int) -> None:
    claimed = shop.worker(name)
    command = uc.CheckpointCopyCommand(
        claimed.job_id, claimed.token, number - 1, artifact(shop, number, name), WorkerId(name)
    )
    shop.attempt(shop.cases.checkpoint_copy()(command))


@then(parsers.re(r"(?P<count>\d+) refused writes? (has|have) been counted"))
def refusals_counted(shop: Shop, count: str) -> None:
    assert len(shop.store.refusals) == int(count)


@then(parsers.parse("copy {number:d} has not been recorded"))
def not_recorded(shop: Shop, number: int) -> None:
    assert number - 1 not in shop.job().checkpoints
    assert shop.order().copies[number - 1].object_key is None


@then(parsers.parse("the user has not been sent copy {number:d}"))
def not_sent(shop: Shop, number: int) -> None:
    ready = [m.payload["index"] for m in shop.store.outbox.values() if m.kind == "copy_ready"]
    assert number - 1 not in ready


@then(parsers.parse('copy {number:d} is recorded as rendered by worker "{name}"'))
def recorded_by(shop: Shop, number: int, name: str) -> None:
    assert shop.job().checkpoints[number - 1] == artifact(shop, number, name)


@then(parsers.parse('worker "{name}" gets no job'))
def gets_no_job(shop: Shop, name: str) -> None:
    assert shop.workers[name] is None


@then(parsers.re(r'worker "(?P<name>\w+)" is given copies (?P<numbers>[\d, and]+) only'))
def given_copies(shop: Shop, name: str, numbers: str) -> None:
    assert [index + 1 for index, _ in shop.worker(name).remaining] == copy_numbers(numbers)


@then(parsers.parse('worker "{name}" is given the same effects for those copies as worker "{first}" was'))
def same_effects(shop: Shop, name: str, first: str) -> None:
    earlier = dict(shop.worker(first).remaining)
    assert all(plan == earlier[index] for index, plan in shop.worker(name).remaining)


@then(parsers.re(r'worker "(?P<name>\w+)" is shown how copies (?P<numbers>[\d, and]+) look, to keep its own copies '
                 r"apart from them"))
def shown_looks(shop: Shop, name: str, numbers: str) -> None:
    assert shop.worker(name).made_looks == tuple((n - 1, looks(n)) for n in copy_numbers(numbers))


@then("both reports get the same answer")
def same_answer(shop: Shop) -> None:
    first, second = shop.answers[-2:]
    assert first == second


@then("the order has been settled once")
def settled_once(shop: Shop) -> None:
    assert len(shop.closings()) == 1
    assert len(shop.closing_messages()) == 1


@then(parsers.re(r"the report is refused because cop(y|ies) (?P<numbers>[\d, and]+) (is|are) still missing"))
@checks_refusal
def refused_for_missing_copies(shop: Shop, numbers: str) -> None:
    assert [i + 1 for i in shop.refusal(CopiesMissing).missing] == copy_numbers(numbers)
