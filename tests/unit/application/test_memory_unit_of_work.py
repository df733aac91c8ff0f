"""The in-memory unit of work keeps the database's promises: all or nothing, optimistic
version checks on concurrent changes, and SKIP LOCKED claims."""

from datetime import UTC, datetime, timedelta

import pytest

from videocopies.application.errors import Conflict
from videocopies.application.ports import OutboxMessage
from videocopies.domain.coins import CoinAccount, LotKind
from videocopies.domain.payments import Payment
from videocopies.domain.shared import LotId, UserId

USER = UserId(1001)
T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)


class Boom(Exception):
    pass


async def test_nothing_is_kept_when_the_block_is_left_by_an_exception_before_commit(shop):
    await shop.grant(50)
    before, published = shop.figures(), list(shop.store.published)

    with pytest.raises(Boom):
        async with shop.uow() as uow:
            account = await uow.accounts.get(USER)
            account.grant(LotId("extra"), LotKind.MANUAL, 10, T0, None)
            newcomer = CoinAccount(UserId(2002))
            newcomer.grant(LotId("gift"), LotKind.MANUAL, 5, T0, None)
            await uow.accounts.add(newcomer)
            await uow.payments.add(Payment("charge-9", USER, 10, 5, "XTR", T0))
            await uow.outbox.add(OutboxMessage(USER, "note", {}, "note:1"))
            raise Boom

    assert shop.figures() == before
    assert set(shop.store.accounts) == {USER}
    assert (shop.store.payments, shop.store.outbox) == ({}, {})
    assert shop.store.published == published


async def test_nothing_is_kept_when_the_block_is_left_without_commit(shop):
    await shop.grant(50)

    async with shop.uow() as uow:
        (await uow.accounts.get(USER)).grant(LotId("extra"), LotKind.MANUAL, 10, T0, None)

    assert shop.figures() == (50, 0, 0, 0)


async def test_a_change_is_invisible_to_other_units_of_work_until_it_is_committed(shop):
    await shop.grant(50)

    async with shop.uow() as writer:
        (await writer.accounts.get(USER)).grant(LotId("extra"), LotKind.MANUAL, 10, T0, None)
        async with shop.uow() as reader:
            assert len((await reader.accounts.get(USER)).lots) == 1
        await writer.commit()

    async with shop.uow() as reader:
        assert len((await reader.accounts.get(USER)).lots) == 2


async def test_a_concurrent_change_to_the_same_account_makes_the_second_commit_conflict(shop):
    await shop.grant(50)
    first, second = shop.uow(), shop.uow()

    async with first, second:
        (await first.accounts.get(USER)).grant(LotId("from-first"), LotKind.MANUAL, 10, T0, None)
        (await second.accounts.get(USER)).grant(LotId("from-second"), LotKind.MANUAL, 99, T0, None)
        await first.commit()
        with pytest.raises(Conflict) as refused:
            await second.commit()

    assert (refused.value.kind, refused.value.key) == ("account", str(USER))
    assert [lot.lot_id for lot in shop.store.accounts[USER].lots][1:] == ["from-first"]
    assert shop.figures() == (60, 0, 0, 0)


async def test_a_commit_that_conflicts_writes_none_of_its_other_changes(shop):
    await shop.grant(50)
    await shop.grant(30, user=UserId(2002))
    first, second = shop.uow(), shop.uow()

    async with first, second:
        (await first.accounts.get(USER)).grant(LotId("from-first"), LotKind.MANUAL, 10, T0, None)
        (await second.accounts.get(UserId(2002))).grant(LotId("gift"), LotKind.MANUAL, 5, T0, None)
        (await second.accounts.get(USER)).grant(LotId("from-second"), LotKind.MANUAL, 99, T0, None)
        await second.payments.add(Payment("charge-9", USER, 10, 5, "XTR", T0))
        await second.outbox.add(OutboxMessage(USER, "note", {}, "note:1"))
        await first.commit()
        with pytest.raises(Conflict):
            await second.commit()

    assert shop.figures(UserId(2002)) == (30, 0, 0, 0)
    assert (shop.store.payments, shop.store.outbox) == ({}, {})


async def test_two_units_of_work_adding_the_same_account_conflict(shop):
    first, second = shop.uow(), shop.uow()

    async with first, second:
        await first.accounts.add(CoinAccount(USER))
        await second.accounts.add(CoinAccount(USER))
        await first.commit()
        with pytest.raises(Conflict):
            await second.commit()


async def test_reading_what_another_unit_of_work_changed_is_no_conflict(shop):
    await shop.grant(50)
    reader, writer = shop.uow(), shop.uow()

    async with reader, writer:
        assert (await reader.accounts.get(USER)).balance(T0).available == 50
        (await writer.accounts.get(USER)).grant(LotId("extra"), LotKind.MANUAL, 10, T0, None)
        await writer.commit()
        await reader.commit()

    assert shop.figures() == (60, 0, 0, 0)


async def test_a_job_claimed_in_an_open_unit_of_work_is_skipped_by_other_claimers(shop):
    await shop.grant(50)
    await shop.order(copies=1)
    shop.clock.advance(timedelta(seconds=1))
    await shop.order(copies=1)
    now = shop.clock.now()

    async with shop.uow() as first:
        (held,) = await first.jobs.claimable(now, 1)
        async with shop.uow() as second:
            (other,) = await second.jobs.claimable(now, 5)
            assert other.job_id != held.job_id
            async with shop.uow() as third:
                assert await third.jobs.claimable(now, 5) == []
    async with shop.uow() as later:
        assert {j.job_id for j in await later.jobs.claimable(now, 5)} == {held.job_id, other.job_id}


async def test_leaving_the_block_without_commit_rolls_back_even_if_the_instance_is_entered_again(shop):
    await shop.grant(50)
    uow = shop.uow()

    async with uow:
        (await uow.accounts.get(USER)).grant(LotId("abandoned"), LotKind.MANUAL, 10, T0, None)
    async with uow:
        await uow.commit()

    assert shop.figures() == (50, 0, 0, 0)
