"""Payment claims, the provider's charges read so far, and reversals, held in memory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from videocopies.domain.payments import PaymentClaim, ProviderTransaction, Reversal


class PaymentLedgers:
    """The committed state (one per InMemoryStore)."""

    def __init__(self) -> None:
        self.claims: dict[str, PaymentClaim] = {}
        self.charges: dict[str, ProviderTransaction] = {}
        self.cursor = 0
        self.reversals: dict[str, Reversal] = {}


class Claims:
    def __init__(self, ledgers: PaymentLedgers, payments: Any) -> None:
        self._ledgers, self._payments = ledgers, payments
        self.added: dict[str, PaymentClaim] = {}
        self.charges: dict[str, ProviderTransaction] = {}
        self._moved: int | None = None

    async def add(self, claim: PaymentClaim) -> None:
        if claim.external_id not in self._ledgers.claims:
            self.added.setdefault(claim.external_id, claim)

    async def confirmable(self) -> Sequence[tuple[PaymentClaim, ProviderTransaction]]:
        charges = {**self._ledgers.charges, **self.charges}
        return [(c, charges[c.external_id]) for c in await self.unconfirmed() if c.external_id in charges]

    async def unconfirmed(self) -> Sequence[PaymentClaim]:
        credited = {p.external_id for p in await self._payments.list()}
        claims = {**self._ledgers.claims, **self.added}.values()
        return sorted((c for c in claims if c.external_id not in credited), key=lambda c: c.claimed_at)

    async def cursor(self) -> int:
        return self._ledgers.cursor if self._moved is None else self._moved

    async def record(self, charges: Sequence[ProviderTransaction], cursor: int) -> None:
        for tx in charges:
            if not tx.refund:
                self.charges.setdefault(tx.external_id, tx)
        self._moved = max(cursor, await self.cursor())

    def commit(self) -> None:
        for key, claim in self.added.items():
            self._ledgers.claims.setdefault(key, claim)
        for key, tx in self.charges.items():
            self._ledgers.charges.setdefault(key, tx)
        if self._moved is not None:
            self._ledgers.cursor = max(self._ledgers.cursor, self._moved)
        self.reset()

    def reset(self) -> None:
        self.added.clear()
        self.charges.clear()
        self._moved = None


class Reversals:
    def __init__(self, ledgers: PaymentLedgers) -> None:
        self._ledgers = ledgers
        self.added: dict[str, Reversal] = {}

    async def add(self, reversal: Reversal) -> None:
        self.added[reversal.external_id] = reversal

    async def list(self) -> Sequence[Reversal]:
        return list({**self._ledgers.reversals, **self.added}.values())

    def commit(self) -> None:
        for key, reversal in self.added.items():
            self._ledgers.reversals.setdefault(key, reversal)
        self.added.clear()
