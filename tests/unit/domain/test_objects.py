"""When an object is due: never before its grace or retention has run from the moment nothing
needed it (or it was delivered), never while it is needed, never twice."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from videocopies.domain.objects import Lifetimes, ObjectKind, ObjectState, StoredObject, strays

T0 = datetime(2026, 1, 1, tzinfo=UTC)
seconds = st.integers(min_value=0, max_value=10 * 86400).map(lambda s: timedelta(seconds=s))


def _object(kind: ObjectKind, state: ObjectState, **at: timedelta) -> StoredObject:
    return StoredObject(f"{kind.value}s/x", kind, state, T0, **{k: T0 + v for k, v in at.items()})


@given(grace=seconds, released=seconds, later=seconds)
def test_a_source_is_due_exactly_its_grace_after_it_was_released(
    grace: timedelta, released: timedelta, later: timedelta
) -> None:
    lifetimes = Lifetimes(source_grace=grace, copy_retention=timedelta(days=1))
    source = _object(ObjectKind.SOURCE, ObjectState.STORED, released_at=released)
    now = T0 + later
    assert source.is_due(now, lifetimes) == (now >= T0 + released + grace)


@given(retention=seconds, delivered=seconds, later=seconds)
def test_a_delivered_copy_is_due_its_retention_after_delivery_even_while_its_order_runs(
    retention: timedelta, delivered: timedelta, later: timedelta
) -> None:
    lifetimes = Lifetimes(source_grace=timedelta(0), copy_retention=retention)
    copy = _object(ObjectKind.COPY, ObjectState.DELIVERED, delivered_at=delivered)
    now = T0 + later
    assert copy.is_due(now, lifetimes) == (now >= T0 + delivered + retention)
    assert copy.in_store


@given(retention=seconds, released=seconds, later=seconds)
def test_a_copy_never_delivered_is_due_its_retention_after_its_order_closed(
    retention: timedelta, released: timedelta, later: timedelta
) -> None:
    lifetimes = Lifetimes(source_grace=timedelta(0), copy_retention=retention)
    copy = _object(ObjectKind.COPY, ObjectState.STORED, released_at=released)
    assert copy.is_due(T0 + later, lifetimes) == (later >= released + retention)


@given(kind=st.sampled_from(ObjectKind), later=seconds)
def test_an_object_still_needed_or_already_deleted_is_never_due(kind: ObjectKind, later: timedelta) -> None:
    zero = Lifetimes(source_grace=timedelta(0), copy_retention=timedelta(0))
    assert not _object(kind, ObjectState.STORED).is_due(T0 + later, zero)
    gone = _object(kind, ObjectState.DELETED, released_at=timedelta(0), deleted_at=timedelta(0))
    assert not gone.is_due(T0 + later, zero) and not gone.in_store


def test_the_cutoff_the_store_is_asked_with_matches_the_rule() -> None:
    lifetimes = Lifetimes(source_grace=timedelta(hours=1), copy_retention=timedelta(days=1))
    assert lifetimes.released_before(ObjectKind.SOURCE, T0) == T0 - timedelta(hours=1)
    assert lifetimes.released_before(ObjectKind.COPY, T0) == T0 - timedelta(days=1)


keys = st.sets(st.sampled_from([f"copies/o/{i}.mp4" for i in range(8)]), max_size=8)


@given(listed=keys, stored=keys, deleted=keys, awaited=keys)
def test_a_stray_has_no_row_that_keeps_it_and_none_can_still_come(
    listed: set[str], stored: set[str], deleted: set[str], awaited: set[str]
) -> None:
    states = {k: ObjectState.DELETED for k in deleted} | {k: ObjectState.STORED for k in stored}
    found = set(strays(listed, states, awaited))
    assert found <= listed
    assert not found & stored and not found & awaited
    assert found == {k for k in listed - stored - awaited}
