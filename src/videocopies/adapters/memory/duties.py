"""Duty leases in memory, with the same promises as the PostgreSQL adapter."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from videocopies.domain.duties import DutyLease


class InMemoryDutyLeases:
    def __init__(self) -> None:
        self.leases: dict[str, DutyLease] = {}
        self._lock = asyncio.Lock()

    async def hold(self, duty: str, decide: Callable[[DutyLease | None], DutyLease | None]) -> DutyLease | None:
        async with self._lock:
            wanted = decide(self.leases.get(duty))
            if wanted is not None:
                self.leases[duty] = wanted
            return self.leases.get(duty)
