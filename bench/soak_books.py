"""The soak's books: what must hold once every order is final and every message is out."""

from __future__ import annotations

import json
from collections import Counter

import httpx
from soak_faults import Zombie
from soak_stack import FINAL, Stack, fetch

from videocopies.adapters.objectstore import S3ObjectStore

LEDGER_CHECKS = {
    # Every lot's coins are somewhere: available, debited, expired, or held for an order.
    "lot_adds_up": """
        SELECT count(*) FROM coin_lots l
        WHERE l.amount <> l.available + l.debited + l.expired
              + (SELECT coalesce(sum((h.hold->>1)::integer), 0)
                   FROM coin_reservations r, jsonb_array_elements(r.holds) h(hold) WHERE h.hold->>0 = l.lot_id)""",
    "negative": """
        SELECT (SELECT count(*) FROM coin_lots WHERE available < 0 OR debited < 0 OR expired < 0)
             + (SELECT count(*) FROM coin_reservations r, jsonb_array_elements(r.holds) h(hold)
                 WHERE (h.hold->>1)::integer < 0)
             + (SELECT count(*) FROM coin_reservations WHERE debited < 0 OR released < 0)""",
    "reservation_adds_up": """
        SELECT count(*) FROM coin_reservations r
        WHERE r.amount <> r.debited + r.released
              + (SELECT coalesce(sum((h.hold->>1)::integer), 0) FROM jsonb_array_elements(r.holds) h(hold))""",
    "debits_match": """
        SELECT count(*) FROM coin_reservations r JOIN orders o USING (order_id)
        WHERE r.debited <> o.price_per_copy * (SELECT count(*) FROM coin_debits d WHERE d.order_id = r.order_id)""",
    # Once every message is out, a closed order holds nothing (a done order holds coins
    # only for copies still on their way).
    "closed_order_holds": """
        SELECT count(*) FROM coin_reservations r JOIN orders o USING (order_id)
        WHERE o.state IN ('done', 'cancelled', 'failed')
          AND EXISTS (SELECT 1 FROM jsonb_array_elements(r.holds) h(hold) WHERE (h.hold->>1)::integer > 0)""",
}


def books(stack: Stack, confirmed: list[str], zombies: list[Zombie]) -> dict[str, int]:
    url = stack.url
    states = dict(fetch(url, "SELECT order_id, state FROM orders WHERE order_id = ANY(%s)", confirmed))
    figures: dict[str, int] = {
        "orders": len(confirmed),
        "final": sum(1 for o in confirmed if states.get(o) in FINAL),
        "lost": sum(1 for o in confirmed if states.get(o) not in FINAL),
        "states": dict(Counter(str(s) for s in states.values())),
    }
    (figures["double_charged"],), = fetch(url, """
        SELECT coalesce(sum(n - 1), 0) FROM (SELECT order_id, key, count(*) n FROM coin_debits GROUP BY 1, 2) d
        WHERE n > 1""")
    figures["double_charged"] += fetch(url, """
        SELECT count(*) FROM coin_debits d JOIN orders o USING (order_id)
        WHERE split_part(d.key, ':', 2)::int >= o.copies""")[0][0]
    figures["charged_undelivered"] = charged_undelivered(stack)
    refused = dict(fetch(url, "SELECT operation || ':' || reason, count(*) FROM refused_writes GROUP BY 1"))
    figures["zombie_writes_attempted"] = sum(refused.values())
    figures["refused_writes"] = refused
    figures["failures"] = dict(fetch(url, "SELECT left(coalesce(last_error, '-'), 60), count(*) FROM jobs "
                                      "WHERE state = 'failed' GROUP BY 1"))
    figures["zombie_writes_accepted"] = sum(
        fetch(url, "SELECT count(*) FROM job_checkpoints WHERE job_id = %s AND object_key LIKE %s "
               "AND created_at > %s", z.job_id, f"%-{z.token[:12]}.mp4", z.lease_until)[0][0]
        for z in zombies
    )
    figures["zombies_watched"] = len(zombies)
    ledger = {name: int(fetch(url, sql)[0][0]) for name, sql in LEDGER_CHECKS.items()}
    figures["ledger_invariant_violations"] = sum(ledger.values())
    figures["ledger_checks"] = ledger
    return figures


def charged_undelivered(stack: Stack) -> int:
    """Debited copies whose message is not in the user's chat as a video."""
    rows = fetch(stack.url, """
        SELECT d.order_id, o.user_id, (x.delivery->>'message_id')::bigint
        FROM coin_debits d JOIN orders o USING (order_id)
        LEFT JOIN outbox x ON x.dedup_key = 'copy:' || d.order_id || ':' || split_part(d.key, ':', 2)
                          AND x.sent_at IS NOT NULL""")
    missing = 0
    with httpx.Client(base_url=stack.sim_url) as sim:
        for _, user, message_id in rows:
            if message_id is None:
                missing += 1
                continue
            answer = sim.get(f"/_sim/users/{user}/chat/{message_id}")
            if answer.status_code != 200 or "video" not in answer.json():
                missing += 1
    return missing


def objects(stack: Stack) -> dict[str, int]:
    stored = set(stored_keys(stack.store))
    rows = fetch(stack.url, "SELECT source_key FROM orders UNION SELECT object_key FROM job_checkpoints")
    referenced = {key for key, in rows}
    return {"objects": len(stored), "orphan_objects": len(stored - referenced),
            "dangling_rows": len(referenced - stored),
            "orphans_seen": sorted(stored - referenced)[:5], "dangling_seen": sorted(referenced - stored)[:5]}


def stored_keys(store: S3ObjectStore) -> list[str]:
    pages = store._client.get_paginator("list_objects_v2").paginate(Bucket=store.bucket)
    return [item["Key"] for page in pages for item in page.get("Contents", [])]


def files_left(stack: Stack) -> int:
    dirs = [stack.scratch / "work"] + ([stack.small_disk / "work"] if stack.small_disk else [])
    return sum(1 for d in dirs if d.exists() for p in d.rglob("*") if p.is_file())




def acknowledged(stack: Stack, quoted: list[str], confirmed: list[str], paid: list[str]) -> dict[str, object]:
    """Every acknowledgement the clients got, looked up in PostgreSQL: the users' quotes and
    confirmations (the use case answered), and what core answered edge 2xx for (its log): inbox updates,
    payments among them, and delivery reports. After SIGKILLs of the server, none may be missing.
    A payment the user paid but core never acknowledged is not lost; `paid_uncredited` shows it."""
    acks = [json.loads(line) for line in stack.acks_log.read_text().splitlines() if line.strip()] \
        if stack.acks_log.exists() else []
    updates = sorted({u for line in acks for u in line.get("inbox", [])})
    payments = sorted({c for line in acks for c in line.get("payments", [])})
    reports = sorted({r for line in acks for r in line.get("reports", [])})
    found = {
        "quotes": {o for o, in fetch(stack.url, "SELECT order_id FROM orders WHERE order_id = ANY(%s)", quoted)},
        "confirmations": {o for o, in fetch(stack.url, "SELECT order_id FROM orders WHERE order_id = ANY(%s) "
                                            "AND state <> 'quoted'", confirmed)},
        "inbox": {u for u, in fetch(stack.url, "SELECT update_id FROM inbox WHERE update_id = ANY(%s)", updates)},
        "payments": {p for p, in fetch(stack.url, "SELECT external_id FROM payments WHERE external_id = ANY(%s)",
                                       payments + paid)},
        "reports": {m for m, in fetch(stack.url, "SELECT id FROM outbox WHERE id = ANY(%s) "
                                      "AND sent_at IS NOT NULL", reports)},
    }
    wanted = {"quotes": quoted, "confirmations": confirmed, "inbox": updates, "payments": payments, "reports": reports}
    missing = {kind: sorted(set(ids) - found[kind]) for kind, ids in wanted.items()}
    return {
        "acknowledged": {kind: len(set(ids)) for kind, ids in wanted.items()},
        "acknowledged_lost": sum(len(ids) for ids in missing.values()),
        "acknowledged_missing": {kind: ids[:5] for kind, ids in missing.items() if ids},
        "payments_paid": len(paid),
        "paid_uncredited": len(set(paid) - found["payments"]),
    }


TRANSIENT = {
    "inbox": "SELECT count(*) FROM inbox",
    "outbox": "SELECT count(*) FROM outbox",
    "receipts": "SELECT count(*) FROM receipts",
    "unconfirmed_orders": "SELECT count(*) FROM orders WHERE state = 'quoted'",
    "job_checkpoints": "SELECT count(*) FROM job_checkpoints",
    # Not pruned: a row goes when core's sweep gives its lapsed buttons to edge (soak_drain.lapse_buttons).
    "lapsing_buttons": "SELECT count(*) FROM lapsing_buttons",
}


def growth(stack: Stack, objects_table: str | None) -> dict[str, int]:
    """Each transient table's rows and the objects in the store, now."""
    counts = {name: int(fetch(stack.url, sql)[0][0]) for name, sql in TRANSIENT.items()}
    if objects_table is not None:
        counts[objects_table] = int(fetch(stack.url, f"SELECT count(*) FROM {objects_table}")[0][0])  # noqa: S608
    counts["store_objects"] = len(stored_keys(stack.store))
    return counts
