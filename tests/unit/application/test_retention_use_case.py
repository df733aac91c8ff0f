"""Pruning as the application runs it, on an in-memory table of rows: every table down to its
own cutoff, batch by batch; a dry run counts the same and deletes nothing; a node that loses
the duty stops after the batch in hand."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import UTC, datetime, timedelta

from videocopies.adapters.memory import ManualClock
from videocopies.application.retention import PruneTables
from videocopies.domain.retention import DAY, PrunableRow, RetentionPolicy, Transient

NOW = datetime(2025, 3, 1, 12, tzinfo=UTC)


class InMemoryRows:
    """Rows by table, each with the facts the domain's rule decides on."""

    def __init__(self, rows: dict[Transient, list[PrunableRow]]) -> None:
        self.rows = rows
        self.batches: list[tuple[Transient, int]] = []

    async def prune(
        self, table: Transient, cutoff: datetime, batch: int | None, dry_run: bool
    ) -> AsyncGenerator[int, None]:
        policy = RetentionPolicy(*(timedelta(0),) * 5)  # the cutoff is the use case's to give
        due = [row for row in self.rows[table] if policy.is_due(row, cutoff)]
        size = batch or len(due) or 1
        for start in range(0, max(len(due), 1), size):
            chunk = due[start:start + size]
            if not dry_run:
                self.rows[table] = [row for row in self.rows[table] if row not in chunk]
            self.batches.append((table, len(chunk)))
            yield len(chunk)


def aged(table: Transient, *days: float, referred: bool = False) -> list[PrunableRow]:
    return [PrunableRow(table.value, NOW - timedelta(days=d), referred) for d in days]


def rows() -> dict[Transient, list[PrunableRow]]:
    return {
        Transient.INBOX: aged(Transient.INBOX, 8, 9, 10, 6) + [PrunableRow("inbox", None)],
        Transient.OUTBOX: aged(Transient.OUTBOX, 7.5, 1),
        Transient.RECEIPTS: aged(Transient.RECEIPTS, 31) + aged(Transient.RECEIPTS, 40, referred=True),
        Transient.QUOTES: aged(Transient.QUOTES, 2, 0.5),
        Transient.CHECKPOINTS: aged(Transient.CHECKPOINTS, 29, 31, 32),
    }


async def test_each_table_is_pruned_down_to_its_own_retention_in_batches() -> None:
    table = InMemoryRows(rows())
    prune = PruneTables(table, ManualClock(NOW), RetentionPolicy(), batch=2)

    dry = await prune(dry_run=True)
    assert table.rows == rows()
    pruned = await prune()

    expected = {Transient.INBOX: 3, Transient.OUTBOX: 1, Transient.RECEIPTS: 1, Transient.QUOTES: 1,
                Transient.CHECKPOINTS: 2}
    assert pruned.rows == dry.rows == expected and pruned.finished and not pruned.dry_run
    assert table.batches.count((Transient.INBOX, 2)) == 2  # 3 rows, 2 at a time, in both runs
    left = {t: sorted(round((NOW - r.ended_at) / DAY, 1) for r in kept if r.ended_at) for t, kept in table.rows.items()}
    assert left == {Transient.INBOX: [6.0], Transient.OUTBOX: [1.0], Transient.RECEIPTS: [40.0],
                    Transient.QUOTES: [0.5], Transient.CHECKPOINTS: [29.0]}


async def test_a_node_that_loses_the_duty_stops_after_the_batch_in_hand() -> None:
    table = InMemoryRows(rows())
    answers = iter([True, False])

    async def still_held() -> bool:
        return next(answers)

    pruned = await PruneTables(table, ManualClock(NOW), RetentionPolicy(), batch=1)(go_on=still_held)

    assert not pruned.finished and pruned.total == 2
    assert len(table.rows[Transient.INBOX]) == 3
