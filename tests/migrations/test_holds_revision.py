"""Revision 0033 moved each reservation's holds from rows of `coin_holds` into its own row: the
same holds are read after it as before, both ways, and code of level 13, which still writes each
hold on its own, leaves the same list behind as code of level 14."""

from __future__ import annotations

import json

import psycopg

from videocopies.adapters.postgres import migrate

from .test_load_revisions import _ROWS, _answers

_HOLDS = "SELECT order_id, seq, lot_id, held FROM coin_holds ORDER BY order_id, seq"


def _rows_at_0032(url: str) -> None:
    migrate._run_alembic(url, "upgrade", "0001")
    migrate._run_alembic(url, "upgrade", "0032")
    with psycopg.connect(url, autocommit=True) as conn:
        for row in _ROWS.strip().split(";\n"):
            conn.execute(row)
        # A closed reservation whose hold was spent, and one that held nothing.
        conn.execute("INSERT INTO coin_reservations (order_id, user_id, amount, debited, released, open) "
                     "VALUES ('o2', 1, 4, 4, 0, false), ('o9', 2, 0, 0, 0, false)")
        conn.execute("INSERT INTO coin_holds (order_id, seq, lot_id, held) VALUES ('o2', 0, 'l2', 0)")


def test_the_holds_move_into_their_reservations_and_back(empty_url: str) -> None:
    url = empty_url
    _rows_at_0032(url)
    with psycopg.connect(url) as conn:
        rows_before = conn.execute(_HOLDS).fetchall()
    loads_before = _answers(url)

    migrate.upgrade(url, "0033")
    with psycopg.connect(url) as conn:
        lists = dict(conn.execute("SELECT order_id, holds FROM coin_reservations").fetchall())
        through_the_view = conn.execute(_HOLDS).fetchall()
    assert lists == {"o1": [["l1", 5], ["l3", 10]], "o2": [["l2", 0]], "o3": [["l4", 4]], "o9": []}
    assert through_the_view == rows_before
    assert _answers(url) == loads_before

    migrate.downgrade(url, "0032")
    with psycopg.connect(url) as conn:
        assert conn.execute(_HOLDS).fetchall() == rows_before
        kind = conn.execute("SELECT relkind FROM pg_class WHERE relname = 'coin_holds'").fetchone()
    assert kind == ("r",)
    assert _answers(url) == loads_before


def _apply(conn: psycopg.Connection, writes: list[tuple[str, dict[str, object]]]) -> None:
    conn.execute("SELECT videocopies_apply(%s::jsonb)", (json.dumps(writes),))


def _reservation(order_id: str, **changed: object) -> dict[str, object]:
    return {"order_id": order_id, "user_id": 2, "amount": 14, "debited": 0, "released": 0, "open": True} | changed


def test_code_of_both_levels_leaves_the_same_holds(empty_url: str) -> None:
    """Level 13 sends a reservation, then each hold (`upsert_hold`); level 14 sends the list with
    the reservation. A confirmation holding from two lots, then a debit and a release."""
    url = empty_url
    _rows_at_0032(url)
    migrate.upgrade(url, "0033")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO coin_lots (lot_id, user_id, kind, amount, granted_at, expires_at, available, "
                     "debited, expired) VALUES ('l5', 2, 'purchase', 10, now(), NULL, 0, 0, 0)")
        _apply(conn, [
            ("insert_reservation", _reservation("old")),
            ("upsert_hold", {"order_id": "old", "seq": 0, "lot_id": "l4", "held": 4}),
            ("upsert_hold", {"order_id": "old", "seq": 1, "lot_id": "l5", "held": 10}),
        ])
        _apply(conn, [("insert_reservation", _reservation("new", holds=[["l4", 4], ["l5", 10]]))])
        _apply(conn, [
            ("update_reservation", _reservation("old", debited=4, released=3)),
            ("upsert_hold", {"order_id": "old", "seq": 0, "lot_id": "l4", "held": 0}),
            ("upsert_hold", {"order_id": "old", "seq": 1, "lot_id": "l5", "held": 7}),
        ])
        _apply(conn, [("update_reservation", _reservation("new", debited=4, released=3, holds=[["l4", 0], ["l5", 7]]))])
        both = conn.execute(
            "SELECT order_id, debited, released, holds FROM coin_reservations WHERE order_id IN ('old', 'new') "
            "ORDER BY order_id"
        ).fetchall()
    assert both == [("new", 4, 3, [["l4", 0], ["l5", 7]]), ("old", 4, 3, [["l4", 0], ["l5", 7]])]
