"""Grant coins to a user, and expire lots whose time has come."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import attrs

from videocopies.application.ports import Clock, Ids
from videocopies.application.use_cases._common import UowFactory, load_account
from videocopies.domain.coins import CoinAccount, LotKind
from videocopies.domain.shared import LotId, UserId


@attrs.frozen
class GrantCoinsCommand:
    user_id: UserId
    kind: LotKind
    amount: int
    valid_for: timedelta | None  # None: never expires
    lot_id: LotId | None = None  # a caller-chosen id makes the grant idempotent


class GrantCoins:
    """Add a lot of coins to a user's account, with its own expiry."""

    def __init__(self, uow: UowFactory, clock: Clock, ids: Ids) -> None:
        self._uow, self._clock, self._ids = uow, clock, ids

    async def __call__(self, cmd: GrantCoinsCommand) -> LotId:
        now = self._clock.now()
        lot_id = cmd.lot_id or self._ids.lot_id()
        async with self._uow() as uow:
            account = await load_account(uow, cmd.user_id, create=True)
            if cmd.lot_id is not None and any(lot.lot_id == lot_id for lot in account.lots):
                return lot_id
            expires_at = now + cmd.valid_for if cmd.valid_for is not None else None
            account.grant(lot_id, cmd.kind, cmd.amount, now, expires_at)
            await uow.commit()
        return lot_id

    async def many(
        self, commands: Sequence[GrantCoinsCommand], read: Sequence[UserId] = ()
    ) -> dict[UserId, CoinAccount | None]:
        """Every grant in one transaction (each idempotent by its lot id, like a single one),
        for a burst of newcomers; returns the accounts of the granted users and of `read` as
        committed, so their balances need no second transaction."""
        now = self._clock.now()
        users = sorted({c.user_id for c in commands} | set(read))  # rows locked in one order
        async with self._uow() as uow:
            await uow.prefetch(accounts=users)  # one round trip for the whole batch
            for cmd in commands:
                account = await load_account(uow, cmd.user_id, create=True)
                lot_id = cmd.lot_id or self._ids.lot_id()
                if any(lot.lot_id == lot_id for lot in account.lots):
                    continue
                expires_at = now + cmd.valid_for if cmd.valid_for is not None else None
                account.grant(lot_id, cmd.kind, cmd.amount, now, expires_at)
            accounts = {user: await uow.accounts.get(user) for user in users}
            await uow.commit()
        return accounts


class ExpireCoins:
    """The sweep that moves coins of expired lots out of `available`."""

    def __init__(self, uow: UowFactory, clock: Clock, batch: int = 500) -> None:
        self._uow, self._clock, self._batch = uow, clock, batch

    async def __call__(self) -> int:
        now = self._clock.now()
        async with self._uow() as uow:
            total = 0
            for account in await uow.accounts.with_lots_expiring(now, self._batch):
                total += account.expire(now)
            await uow.commit()
        return total
