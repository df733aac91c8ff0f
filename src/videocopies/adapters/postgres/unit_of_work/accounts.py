"""Coin accounts: the aggregate loaded with its working lots (those with coins available, those
its open reservations hold from, and those a use case names) and its open reservations, locked;
at commit the rows that changed since the load (a snapshot of each account's children tells
which). A spent lot stays in the database unless named: it can no longer change by itself."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from videocopies.adapters.postgres import mappers
from videocopies.adapters.postgres.unit_of_work.write_set import Transaction, Writes
from videocopies.domain.coins import CoinAccount, CoinLot
from videocopies.domain.shared import LotId, UserId


def _lot_snapshot(lot: CoinLot) -> tuple[Any, ...]:
    return (lot.available, lot.debited, lot.expired, lot.refunded, lot.expires_at)


def _account_snapshot(account: CoinAccount) -> dict[str, Any]:
    return {
        "lots": {lot.lot_id: _lot_snapshot(lot) for lot in account.lots},
        "reservations": {
            r.order_id: (r.debited, r.released, r.open, tuple(h.held for h in r.holds), frozenset(r.debit_keys))
            for r in account.reservations.values()
        },
    }


class PostgresAccounts:
    def __init__(self, uow: Transaction) -> None:
        self._uow = uow
        self.loaded: dict[UserId, tuple[CoinAccount, int, dict[str, Any]]] = {}
        self.added: dict[UserId, CoinAccount] = {}
        self.absent: set[UserId] = set()  # prefetched and not there: no second look
        self.named: dict[UserId, set[LotId]] = {}  # lots asked for by id, found or not: no second look

    async def get(self, user_id: UserId, lots: Sequence[LotId] = ()) -> CoinAccount | None:
        if user_id in self.added:
            return self.added[user_id]
        if user_id in self.loaded:
            account, _, snapshot = self.loaded[user_id]
            asked = self.named.setdefault(user_id, set())
            if missing := [lot for lot in dict.fromkeys(lots) if lot not in snapshot["lots"] and lot not in asked]:
                await self._add_lots(account, snapshot, missing)
                asked.update(missing)
            return account
        if user_id in self.absent:
            return None
        row = await self._uow.locked_fetchone("load_account", {"user_id": user_id, "lots": list(lots)})
        self.named.setdefault(user_id, set()).update(lots)
        return None if row is None else self.remember(user_id, row)

    async def _add_lots(self, account: CoinAccount, snapshot: dict[str, Any], lot_ids: list[LotId]) -> None:
        """Lots named after the account was loaded (its row is locked already): added as loaded."""
        rows = await self._uow.fetchall("account_lots", {"user_id": account.account_id, "lots": lot_ids})
        for lot in mappers.lots_from_rows(rows):
            account.include(lot)
            snapshot["lots"][lot.lot_id] = _lot_snapshot(lot)

    def remember_found(self, rows: list[dict[str, Any]], asked: list[int], lots: list[LotId]) -> None:
        """What one videocopies_load found: the accounts not known yet, those `asked` and missing,
        and the `lots` named, read with every account asked, found or not."""
        for row in rows:
            user_id = UserId(row["user_id"])
            if user_id not in self.loaded and user_id not in self.added:
                self.remember(user_id, row)
        self.absent.update(UserId(a) for a in asked if a not in self.loaded and a not in self.added)
        for asked_id in asked:
            self.named.setdefault(UserId(asked_id), set()).update(lots)

    def remember(self, user_id: UserId, row: dict[str, Any]) -> CoinAccount:
        account = mappers.account_from_row(user_id, row)
        self.loaded[user_id] = (account, account.version, _account_snapshot(account))
        return account

    async def add(self, account: CoinAccount) -> None:
        self.added[account.account_id] = account

    async def with_lots_expiring(self, now: datetime, limit: int) -> Sequence[CoinAccount]:
        rows = await self._uow.fetchall("accounts_with_expiring_lots", {"now": now, "limit": limit})
        return [a for row in rows if (a := await self.get(UserId(row["user_id"]))) is not None]

    def writes(self, now: datetime) -> Writes:
        # Every new account before any of their children: a batch of newcomers becomes one
        # run of account inserts and one of lot inserts (see _coalesced).
        out: Writes = [
            ("insert_account", {"user_id": account.account_id, "version": account.version, "now": now})
            for account in self.added.values()
        ]
        for account in self.added.values():
            out += self._children(account, {"lots": {}, "reservations": {}})
        for account, loaded, snapshot in self.loaded.values():
            if account.version == loaded:
                continue
            out.append(
                (
                    "update_account_version",
                    {"user_id": account.account_id, "version": account.version, "loaded": loaded},
                )
            )
            out += self._children(account, snapshot)
        return out

    def _children(self, account: CoinAccount, before: dict[str, Any]) -> Writes:
        out: Writes = []
        user_id = account.account_id
        for lot in account.lots:
            was = before["lots"].get(lot.lot_id)
            if was is None:
                out.append(("insert_lot", mappers.lot_params(user_id, lot)))
            else:
                if was[:4] != (lot.available, lot.debited, lot.expired, lot.refunded):
                    out.append(("update_lot", mappers.lot_change_params(lot)))
                if was[4] != lot.expires_at:  # a reversed lot ends (migration 0018)
                    out.append(("end_lot", {"lot_id": lot.lot_id, "expires_at": lot.expires_at}))
        for r in account.reservations.values():
            was = before["reservations"].get(r.order_id)
            params = {
                "order_id": r.order_id,
                "user_id": user_id,
                "amount": r.amount,
                "debited": r.debited,
                "released": r.released,
                "open": r.open,
                "holds": [[hold.lot_id, hold.held] for hold in r.holds],  # in its row (migration 0033)
            }
            if was is None:
                out.append(("insert_reservation", params))
                old_keys: frozenset[str] = frozenset()
            else:
                if was[:4] != (r.debited, r.released, r.open, tuple(h.held for h in r.holds)):
                    out.append(("update_reservation", params))
                old_keys = was[4]
            for key in sorted(r.debit_keys - old_keys):
                out.append(("insert_debit", {"order_id": r.order_id, "key": key}))
        return out
