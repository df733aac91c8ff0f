"""Revision 0031 replaced `videocopies_load` with one that starts fewer statements: for every kind
of read a use case makes, it answers exactly as 0027's function did on the same rows."""

from __future__ import annotations

import json

import psycopg

from videocopies.adapters.postgres import migrate

_ROWS = """
INSERT INTO coin_accounts (user_id, version, created_at) VALUES (1, 3, now()), (2, 1, now()), (3, 1, now());
INSERT INTO coin_lots (lot_id, user_id, kind, amount, granted_at, expires_at, available, debited, expired)
VALUES ('l1', 1, 'start', 20, now(), now() + interval '30 days', 5, 0, 0),
       ('l2', 1, 'purchase', 40, now(), NULL, 0, 40, 0),
       ('l3', 1, 'manual', 10, now(), NULL, 0, 0, 0),
       ('l4', 2, 'start', 20, now(), NULL, 20, 0, 0);
INSERT INTO orders (order_id, user_id, source_key, copies, price_per_copy, total, tariff_version,
                    quote_expires_at, quote_token, seed, state, copy_states, created_at, version)
VALUES ('o1', 1, 's1', 5, 3, 15, 1, now(), 't', 7, 'confirmed', '[["pending", null]]', now(), 1),
       ('o2', 1, 's2', 1, 4, 4, 1, now(), 't', 8, 'quoted', '[]', now(), 0),
       ('o3', 2, 's3', 1, 4, 4, 1, now(), 't', 9, 'confirmed', '[["pending", null]]', now(), 1);
INSERT INTO coin_reservations (order_id, user_id, amount, debited, released, open)
VALUES ('o1', 1, 15, 0, 0, true), ('o3', 2, 4, 0, 0, true);
INSERT INTO coin_holds (order_id, seq, lot_id, held) VALUES ('o1', 0, 'l1', 5), ('o1', 1, 'l3', 10), ('o3', 0, 'l4', 4);
INSERT INTO coin_debits (order_id, key) VALUES ('o1', 'copy:0');
INSERT INTO jobs (job_id, order_id, state, plans, max_attempts, attempts, cancel_requested, created_at, version)
VALUES ('j1', 'o1', 'queued', '{"seed": 7, "copies": 5}', 3, 0, false, now(), 0),
       ('j3', 'o3', 'queued', '[]', 3, 0, false, now(), 0);
INSERT INTO referrals (invitee, inviter, at) VALUES (1, 2, now()), (3, 2, now());
"""

READS = [
    {"lots": [], "orders": ["o2"], "accounts": [1], "referrals": [1], "their_orders": False, "their_accounts": False},
    {"lots": [], "orders": ["o1"], "accounts": [1]},
    {"orders": ["o1"]},
    {"accounts": [2], "lots": ["l4"]},
    {"accounts": [1]},
    {"referrals": [3]},
    {"referrals": [3, 1, 3]},
    {"lots": [], "orders": ["o3", "o1", "o3"], "accounts": [2, 1, 2]},
    {"jobs": ["j1"], "their_orders": True, "their_accounts": True, "lots": []},
    {"jobs": ["j1", "j3"], "orders": ["o1"], "their_orders": True, "their_accounts": True, "lots": []},
    {"jobs": ["j3"], "orders": ["o2"], "accounts": [1], "their_orders": True, "their_accounts": True, "lots": []},
    {"claim": {"now": "2030-01-01T00:00:00+00:00", "limit": 5}, "their_orders": True, "receipts": ["r1"]},
    {"orders": ["nowhere"], "accounts": [99], "referrals": [99]},
    {},
]


def _answers(url: str) -> list[object]:
    """Each read's answer, in a transaction rolled back (a claim leaves its jobs queued)."""
    answers = []
    with psycopg.connect(url) as conn:
        for reads in READS:
            answers.append(conn.execute("SELECT videocopies_load(%s::jsonb)", (json.dumps(reads),)).fetchone()[0])
            conn.rollback()
    return answers


def test_the_load_of_0031_answers_every_read_as_0027s_did(empty_url: str) -> None:
    url = empty_url
    migrate._run_alembic(url, "upgrade", "0001")
    migrate._run_alembic(url, "upgrade", "0031")
    with psycopg.connect(url, autocommit=True) as conn:
        for row in _ROWS.strip().split(";\n"):
            conn.execute(row)
    now = _answers(url)
    migrate.downgrade(url, "0030")
    before = _answers(url)
    assert now == before
    assert now[0]["orders"][0]["order_id"] == "o2" and now[0]["accounts"][0]["version"] == 3
    assert [r["invitee"] for r in now[6]["referrals"]] == [1, 3]
    assert [o["order_id"] for o in now[7]["orders"]] == ["o1", "o3"]
    assert [o["order_id"] for o in now[10]["orders"]] == ["o2", "o3"] and now[10]["account_ids"] == [1, 2]
    assert len(now[11]["claimed"]) == 2
