"""A streaming standby of a LocalPostgres: it follows the primary synchronously, refuses
writes until promoted, and a multi-host URL finds whichever server takes writes, directly or
through a PgBouncer beside each server."""

from __future__ import annotations

import psycopg
import pytest

from videocopies.embedded.pgbouncer import LocalPgBouncer
from videocopies.embedded.postgres import LocalPostgres
from videocopies.embedded.standby import LocalStandby, failover_url

from .harness import connect, fetch_all, fetch_one


def test_a_standby_follows_refuses_writes_and_takes_over_when_promoted() -> None:
    with LocalPostgres() as primary, LocalStandby(primary, name="standby_a") as standby:
        assert standby.replication_state() == ("streaming", "sync")
        assert fetch_one(primary.url(), "SHOW synchronous_commit") == ("on",)
        url = failover_url([standby, primary])  # the standby first: it must be passed over
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (n int)")
            conn.execute("INSERT INTO kept VALUES (1)")  # committed means on the standby too
            assert conn.info.port == primary.port
        assert fetch_all(standby.url(), "SELECT n FROM kept") == [(1,)]
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            fetch_one(standby.url(), "INSERT INTO kept VALUES (2) RETURNING n")
        assert standby.in_recovery()
        primary.stop()
        standby.promote()
        assert not standby.in_recovery()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("INSERT INTO kept VALUES (2)")
            assert conn.info.port == standby.port
        assert fetch_all(standby.url(), "SELECT n FROM kept ORDER BY n") == [(1,), (2,)]


def test_stopping_a_standby_leaves_the_primary_as_it_was() -> None:
    with LocalPostgres() as primary:
        with LocalStandby(primary, name="standby_b") as standby:
            assert standby.replication_state() == ("streaming", "sync")
            assert fetch_all(primary.url(), "SELECT slot_name FROM pg_replication_slots") == [("standby_b_slot",)]
        assert fetch_all(primary.url(), "SELECT slot_name FROM pg_replication_slots") == []
        assert fetch_one(primary.url(), "SHOW synchronous_standby_names") == ("",)
        assert fetch_one(primary.url(), "SHOW synchronous_commit") == ("off",)  # LocalPostgres's own
        with LocalStandby(primary, name="standby_b2", synchronous=False) as standby:
            assert standby.replication_state() == ("streaming", "async")


def test_through_a_pgbouncer_beside_each_server_the_promoted_one_is_found_once_its_pgbouncer_reconnects() -> None:
    with (
        LocalPostgres() as primary,
        LocalStandby(primary, name="standby_c") as standby,
        LocalPgBouncer(upstream_port=primary.port) as at_primary,
        LocalPgBouncer(upstream_port=standby.port) as at_standby,
    ):
        url = failover_url([at_standby, at_primary])
        with connect(url, autocommit=True) as conn:
            assert conn.info.port == at_primary.port
            conn.execute("CREATE TABLE kept (n int)")
        primary.stop()
        at_primary.stop()
        standby.promote()
        # PgBouncer 1.18 answers new clients with the server parameters it saw first, and
        # in_hot_standby=on there still makes libpq pass the promoted server over.
        with pytest.raises(psycopg.OperationalError, match="read-only"):
            connect(url, autocommit=True)
        with psycopg.connect(at_standby.admin_url(), autocommit=True, cursor_factory=psycopg.ClientCursor) as admin:
            admin.execute("RECONNECT postgres")
        with connect(url, autocommit=True) as conn:
            assert conn.info.port == at_standby.port
            conn.execute("INSERT INTO kept VALUES (1)")
