"""The floor under bench/queue_throughput.py: the rows our claim and completion write, written
by hand-made set-based SQL with none of the application around it.

For each batch, one statement claims (the queued jobs locked with SKIP LOCKED in the queue's
order, leased with a fresh token, their orders set running) and commits; one statement
completes (each job fenced by its token and lease expiry, set done, its order done, its
capacity slot freed, the order's closing message queued in the outbox, its receipt stored)
and commits. These are the rows the production path writes for the same jobs (its write sets
for a claim and a completion name the same tables and rows); it also reads and locks the
users' coin accounts, which this does not, so this is a floor, not a twin. Prepared statements on a
direct connection, synchronous psycopg: about the least CPU a client can spend per batch.

Run on the same server, jobs and process count as ours: how fast any implementation of these
writes could go here when claims and completions commit apart, and so what share of the gap to
pgqueuer is the rows themselves.

`bare=True` is the least any queue can do and still meet issue 18's queue line (fenced, with
receipts): each job leased, then done if its token and lease still hold, and its receipt
stored; no order, no slot, no message. And one commit a batch instead of two: a worker's
completions and its next claim go in one transaction (the first claim alone, the last
completion with the claim that finds nothing). Its ratio to pgqueuer says what that line asks
of the machine of the run.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg
from _support import drained_together

CLAIM = """
WITH picked AS (
    SELECT job_id FROM jobs WHERE state = 'queued' ORDER BY created_at, job_id
     LIMIT %(limit)s FOR UPDATE SKIP LOCKED),
leased AS (
    UPDATE jobs SET state = 'leased', attempts = attempts + 1, worker_id = %(worker)s,
                    owner_token = md5(random()::text || jobs.job_id), acquired_at = now(),
                    lease_until = now() + interval '30 seconds', version = version + 1
      FROM picked WHERE jobs.job_id = picked.job_id
    RETURNING jobs.job_id, jobs.order_id, jobs.owner_token, jobs.attempts),
started AS (
    UPDATE orders SET state = 'running', version = version + 1
      FROM leased WHERE orders.order_id = leased.order_id
    RETURNING orders.order_id)
SELECT job_id, owner_token, attempts, (SELECT count(*) FROM started) FROM leased
"""

# The claim without its orders' update: everything up to the `leased` step.
BARE_CLAIM = CLAIM.split("),\nstarted AS (")[0] + ")\nSELECT job_id, owner_token, attempts FROM leased\n"

COMPLETE = """
WITH asked AS (
    SELECT * FROM unnest(%(jobs)s::text[], %(tokens)s::text[], %(receipts)s::text[])
        AS asked(job_id, token, receipt_id)),
done AS (
    UPDATE jobs SET state = 'done', worker_id = NULL, owner_token = NULL, acquired_at = NULL,
                    lease_until = NULL, closed_by = asked.token, version = version + 1
      FROM asked
     WHERE jobs.job_id = asked.job_id AND jobs.owner_token = asked.token AND jobs.lease_until > now()
    RETURNING jobs.job_id, jobs.order_id, asked.receipt_id),
closed AS (
    UPDATE orders SET state = 'done', version = version + 1
      FROM done WHERE orders.order_id = done.order_id
    RETURNING orders.order_id, orders.user_id),
freed AS (
    UPDATE capacity_slots SET order_id = NULL FROM closed WHERE capacity_slots.order_id = closed.order_id),
told AS (
    INSERT INTO outbox (user_id, kind, payload, dedup_key, created_at)
    SELECT user_id, 'order_closed', jsonb_build_object('order_id', order_id, 'state', 'done'),
           'closed:' || order_id, now() FROM closed
        ON CONFLICT (dedup_key) DO NOTHING),
kept AS (
    INSERT INTO receipts (receipt_id, fingerprint, result, created_at)
    SELECT receipt_id, md5(receipt_id), jsonb_build_object('job_id', job_id, 'state', 'done', 'copies', '[]'::jsonb),
           now() FROM done)
SELECT count(*) FROM done
"""

# The completion without the order's closing: the `done` step and the receipts (`kept`).
BARE_COMPLETE = (COMPLETE.split("),\nclosed AS (")[0] + "),\n"
                 + COMPLETE[COMPLETE.index("kept AS (") : COMPLETE.index("SELECT count(*) FROM done")]
                 + "SELECT count(*) FROM done\n")


def _drain(args: tuple[str, str, int, float, bool]) -> tuple[float, float, int, float]:
    url, worker, batch, start_at, bare = args
    claim, complete = (BARE_CLAIM, BARE_COMPLETE) if bare else (CLAIM, COMPLETE)
    with psycopg.connect(url, prepare_threshold=0) as conn:
        time.sleep(max(0.0, start_at - time.time()))
        began, done, cpu = time.time(), 0, time.process_time()
        rows = conn.execute(claim, {"limit": batch, "worker": worker}).fetchall()
        conn.commit()
        while rows:
            asked = {"jobs": [r[0] for r in rows], "tokens": [r[1] for r in rows],
                     "receipts": [f"complete:{r[0]}:{r[2]}" for r in rows]}
            (completed,) = conn.execute(complete, asked).fetchone()  # type: ignore[misc]
            if not bare:
                conn.commit()
            assert completed == len(rows), (completed, rows)
            done += completed
            rows = conn.execute(claim, {"limit": batch, "worker": worker}).fetchall()
            conn.commit()
        return began, time.time(), done, time.process_time() - cpu


def throughput(url: str, workers: int, batch: int, postmaster: int, bare: bool = False) -> dict[str, Any]:
    def args(start_at: float) -> list[tuple[str, str, int, float, bool]]:
        return [(url, f"floor{i}", batch, start_at, bare) for i in range(workers)]

    figures = drained_together(_drain, args, postmaster, workers, batch)
    with psycopg.connect(url) as conn:
        done, receipts, closed = conn.execute(
            "SELECT count(*) FILTER (WHERE state = 'done'), (SELECT count(*) FROM receipts),"
            " (SELECT count(*) FROM orders WHERE state = 'done') FROM jobs"
        ).fetchone()  # type: ignore[misc]
    if bare:
        assert done == figures["jobs"] == receipts and closed == 0, (done, figures["jobs"], receipts, closed)
    else:
        assert done == figures["jobs"] == receipts == closed, (done, figures["jobs"], receipts, closed)
    return figures
