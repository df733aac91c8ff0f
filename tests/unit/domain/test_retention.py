"""How long rows live: money is never pruned, nothing is pruned before its end state plus its
retention, and a checkpoint may not be pruned before its copy can have left the store."""

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from videocopies.domain.retention import (
    DAY,
    MONEY,
    CheckpointsOutliveCopies,
    PrunableRow,
    RetentionPolicy,
    Transient,
)

NOW = datetime(2025, 3, 1, 12, tzinfo=UTC)

spans = st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=90))
policies = st.builds(RetentionPolicy, spans, spans, spans, spans, spans)
transient_tables = st.sampled_from([t.value for t in Transient])
tables = st.one_of(transient_tables, st.sampled_from(sorted(MONEY)), st.text(max_size=12))
rows = st.builds(
    PrunableRow, tables, st.none() | st.datetimes(timezones=st.just(UTC)).filter(lambda d: d.year > 1), st.booleans()
)


@given(policies, st.sampled_from(sorted(MONEY)), rows)
def test_money_is_never_due(policy: RetentionPolicy, money: str, row: PrunableRow) -> None:
    assert not policy.is_due(PrunableRow(money, row.ended_at, row.still_referred), NOW)


@given(policies, transient_tables, st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=200)), st.booleans())
def test_a_row_is_due_exactly_once_its_retention_has_passed_and_nothing_refers_to_it(
    policy: RetentionPolicy, table: str, age: timedelta, referred: bool
) -> None:
    row = PrunableRow(table, NOW - age, still_referred=referred)

    assert policy.is_due(row, NOW) == (not referred and age >= policy.kept_for(Transient(table)))


@given(policies, rows)
def test_nothing_younger_than_its_retention_nor_unfinished_is_due(policy: RetentionPolicy, row: PrunableRow) -> None:
    if policy.is_due(row, NOW):
        assert row.ended_at is not None and not row.still_referred
        assert row.table not in MONEY
        assert NOW - row.ended_at >= policy.kept_for(Transient(row.table))


def test_money_tables_are_not_transient() -> None:
    assert not MONEY & {t.value for t in Transient}


def test_the_defaults() -> None:
    policy = RetentionPolicy()

    assert (policy.inbox, policy.outbox, policy.receipts, policy.quotes, policy.checkpoints) == (
        7 * DAY, 7 * DAY, 30 * DAY, DAY, 30 * DAY
    )


def test_retention_zero_makes_a_row_due_when_it_ends() -> None:
    policy = RetentionPolicy(*(timedelta(0),) * 5)

    assert policy.is_due(PrunableRow("inbox", NOW), NOW)
    assert not policy.is_due(PrunableRow("inbox", NOW + timedelta(microseconds=1)), NOW)
    assert not policy.is_due(PrunableRow("inbox", None), NOW)


def test_a_negative_retention_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        RetentionPolicy(inbox=-timedelta(seconds=1))


def test_checkpoints_must_outlive_the_copies_they_name() -> None:
    copy_lifetime = timedelta(hours=25)
    RetentionPolicy(checkpoints=copy_lifetime).check_copy_lifetime(copy_lifetime)

    with pytest.raises(CheckpointsOutliveCopies):
        RetentionPolicy(checkpoints=copy_lifetime - timedelta(seconds=1)).check_copy_lifetime(copy_lifetime)
