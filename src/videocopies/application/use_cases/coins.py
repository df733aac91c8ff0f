"""Grant coins to a user, and expire lots whose time has come."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import attrs

from videocopies.application.errors import Conflict
from videocopies.application.ports import Clock, GrantRecord, Ids
from videocopies.application.use_cases._common import UowFactory, load_account
from videocopies.application.use_cases.announcements import CoinsExpired, CoinsGranted
from videocopies.application.use_cases.joined import new_or_joined
from videocopies.application.use_cases.reason_codes import grant_code
from videocopies.domain.coins import CoinAccount, LotKind
from videocopies.domain.shared import LotId, UserId


@attrs.frozen
class GrantCoinsCommand:
    user_id: UserId
    kind: LotKind
    amount: int
    valid_for: timedelta | None  # None: never expires
    lot_id: LotId | None = None  # a caller-chosen id makes the grant idempotent
    granted_by: str | None = None  # recorded with `reason`, and the user is told, when given
    reason: str = ""


@attrs.frozen
class Granted:
    """What `GrantCoins.many` did: the accounts as committed, and the lots it created (a lot
    that already existed is not granted again)."""

    accounts: dict[UserId, CoinAccount | None]
    new_lots: frozenset[LotId]


class GrantCoins:
    """Add a lot of coins to a user's account, with its own expiry. A grant by someone
    (an operator's node) is recorded with who and why, and announced to the user."""

    def __init__(self, uow: UowFactory, clock: Clock, ids: Ids) -> None:
        self._uow, self._clock, self._ids = uow, clock, ids

    async def __call__(self, cmd: GrantCoinsCommand) -> LotId:
        now = self._clock.now()
        lot_id = cmd.lot_id or self._ids.lot_id()
        async with self._uow() as uow:
            account = await load_account(uow, cmd.user_id, create=True, lots=[cmd.lot_id] if cmd.lot_id else [])
            if cmd.lot_id is not None and any(lot.lot_id == lot_id for lot in account.lots):
                return lot_id
            expires_at = now + cmd.valid_for if cmd.valid_for is not None else None
            account.grant(lot_id, cmd.kind, cmd.amount, now, expires_at)
            if cmd.granted_by is not None:
                record = GrantRecord(lot_id, cmd.user_id, cmd.kind, cmd.amount, cmd.granted_by, cmd.reason, now)
                await uow.grants.add(record)
                await uow.record(CoinsGranted(cmd.user_id, lot_id, cmd.amount, grant_code(cmd.reason), expires_at))
            await uow.commit()
        return lot_id

    async def many(self, commands: Sequence[GrantCoinsCommand], read: Sequence[UserId] = ()) -> Granted:
        """Every grant in one transaction (each idempotent by its lot id, like a single one),
        for a burst of newcomers; gives the accounts of the granted users and of `read` as
        committed, so their balances need no second transaction, and which lots are new."""
        now = self._clock.now()
        new_lots: set[LotId] = set()
        users = sorted({c.user_id for c in commands} | set(read))  # rows locked in one order
        async with new_or_joined(self._uow) as uow:
            named = [cmd.lot_id for cmd in commands if cmd.lot_id is not None]
            await uow.prefetch(accounts=users, lots=named)  # one round trip for the whole batch
            for cmd in commands:
                if cmd.granted_by is not None:
                    raise ValueError("a grant someone made is recorded and announced: grant it on its own")
                named_lot = [cmd.lot_id] if cmd.lot_id is not None else []  # a fresh id names no lot
                account = await load_account(uow, cmd.user_id, create=True, lots=named_lot)
                lot_id = cmd.lot_id or self._ids.lot_id()
                if any(lot.lot_id == lot_id for lot in account.lots):
                    continue
                expires_at = now + cmd.valid_for if cmd.valid_for is not None else None
                account.grant(lot_id, cmd.kind, cmd.amount, now, expires_at)
                new_lots.add(lot_id)
            accounts = {user: await uow.accounts.get(user) for user in users}
            await uow.commit()
        return Granted(accounts, frozenset(new_lots))


class ExpireCoins:
    """The sweep that moves coins of expired lots out of `available`, one account per
    transaction (a busy account is left for the next round), telling each user what expired."""

    def __init__(self, uow: UowFactory, clock: Clock, batch: int = 500) -> None:
        self._uow, self._clock, self._batch = uow, clock, batch

    async def __call__(self) -> int:
        now = self._clock.now()
        total = 0
        busy: set[UserId] = set()
        while True:
            async with self._uow() as uow:
                due = [a.account_id for a in await uow.accounts.with_lots_expiring(now, self._batch + len(busy))]
            due = [user_id for user_id in due if user_id not in busy]
            if not due:
                return total
            for user_id in due:
                try:
                    expired = await self._expire(user_id, now)
                except Conflict:
                    expired = 0
                if not expired:  # written meanwhile: the next sweep looks again
                    busy.add(user_id)
                total += expired

    async def _expire(self, user_id: UserId, now: datetime) -> int:
        async with self._uow() as uow:
            account = await uow.accounts.get(user_id)
            if account is None:
                return 0
            expired = {lot.lot_id: lot.available for lot in account.lots if lot.is_expired(now) and lot.available}
            amount = account.expire(now)
            if amount:
                for lot_id, coins in expired.items():
                    await uow.record(CoinsExpired(user_id, lot_id, coins))
                await uow.commit()
        return amount
