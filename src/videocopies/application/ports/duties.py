"""What one node at a time does: holding a duty's lease, and pruning the transient rows."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from datetime import datetime
from typing import Protocol

from videocopies.domain.duties import DutyLease
from videocopies.domain.retention import Transient


class DutyLeases(Protocol):
    async def hold(
        self, duty: str, decide: Callable[[DutyLease | None], DutyLease | None]
    ) -> DutyLease | None:
        """Lock the duty's lease, store what `decide` makes of it (None: leave it), and
        return the lease as it stands afterwards; atomic against other callers."""
        ...


class TransientRows(Protocol):
    def prune(self, table: Transient, cutoff: datetime, batch: int | None, dry_run: bool) -> AsyncGenerator[int, None]:
        """Delete the rows of `table` that reached their end state by `cutoff` and that nothing
        refers to, `batch` at a time (None: all at once), each batch in its own transaction;
        yields how many each batch deleted. `dry_run` deletes nothing and yields the same
        counts."""
        ...
