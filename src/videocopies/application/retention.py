"""Pruning transient rows past their retention (see domain/retention.py): batch by batch, each
in its own short transaction, by one node at a time under the `prune-tables` duty."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta

import attrs

from videocopies.application.duties import HoldDuty
from videocopies.application.ports import Clock, TransientRows
from videocopies.domain.retention import PRUNE_TABLES, RetentionPolicy, Transient

log = logging.getLogger(__name__)


@attrs.frozen
class Pruned:
    """Rows deleted (or, in a dry run, that would be) per table."""

    rows: dict[Transient, int]
    dry_run: bool
    finished: bool = True  # False: stopped before every table was done

    @property
    def total(self) -> int:
        return sum(self.rows.values())


class PruneTables:
    """Every transient table in turn, each down to its cutoff: money rows are never touched."""

    def __init__(self, rows: TransientRows, clock: Clock, policy: RetentionPolicy, batch: int | None = 1000) -> None:
        self._rows, self._clock, self._policy, self._batch = rows, clock, policy, batch

    async def __call__(
        self, dry_run: bool = False, go_on: Callable[[], Awaitable[bool]] | None = None
    ) -> Pruned:
        """`go_on` is asked before each further batch; False stops the pruning there."""
        now = self._clock.now()
        counts = dict.fromkeys(Transient, 0)
        for table in Transient:
            batches = self._rows.prune(table, self._policy.cutoff(table, now), self._batch, dry_run)
            try:
                async for pruned in batches:
                    counts[table] += pruned
                    if go_on is not None and not await go_on():
                        return Pruned(counts, dry_run, finished=False)
            finally:
                await batches.aclose()
        return Pruned(counts, dry_run)


async def keep_pruning(
    prune: PruneTables, hold: HoldDuty, clock: Clock, holder: str, token: str, every: timedelta, stop: asyncio.Event
) -> None:
    """Prune every `every` while this node holds the duty, renewing it between batches: a node
    that lost it stops after the batch in hand, and another node's pass goes on."""

    async def still_held() -> bool:
        return not stop.is_set() and (await hold(PRUNE_TABLES, holder, token)).held_with(token, clock.now())

    while not stop.is_set():
        try:
            if await still_held():
                pruned = await prune(go_on=still_held)
                if pruned.total:
                    log.info("pruned %s", ", ".join(f"{t.value} {n}" for t, n in pruned.rows.items() if n))
        except Exception as error:  # noqa: BLE001 - a database restart must not stop the duty
            log.warning("pruning failed: %r", error)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every.total_seconds())
