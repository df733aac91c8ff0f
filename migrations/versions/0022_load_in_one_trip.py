"""`videocopies_load` reads everything a use case reads first, in the one round trip that also
opens its transaction: a claim's jobs with their orders, a completion's receipts, jobs, orders
and accounts, a confirmation's order, account and unsettled referral.

Before this revision a claim took five round trips (BEGIN, the claimable ids, the jobs, their
orders, the writes with COMMIT) and a batch of completions six; on a durable server the queue
ran short of CPU, not of disk flushes, and each round trip costs both the server and the client
a statement's worth. Now each takes two: this load, then the writes with their COMMIT.

The function takes a JSON object; every key is optional, and the two keys of 0015 (`orders`,
`accounts`) mean what they meant, so code of level 6 runs on it unchanged:
- `receipts`: ids, read without a lock (a receipt is written once and never changed);
- `claim`: `{"now", "limit", "max_bytes"}`: lapsed leases first, then queued jobs oldest first,
  skipping rows another transaction holds (as the `claimable_jobs` query);
- `jobs`: ids, locked in id order;
- `their_orders`: also each loaded job's order; `their_accounts`: also each loaded order's
  account;
- `orders`, `accounts`: ids, locked in id order;
- `referrals`: invitees whose referral is still unsettled, locked.
Locks are taken jobs, orders, accounts, referrals, each kind in id order: the order every use
case already locked them in, so two transactions never wait on each other in a cycle. Rows are
read by statements that start after their locks are held, with a fresh snapshot: a load that
waited for a lock sees what the previous holder committed.

It answers `{"receipts", "claimed", "jobs", "orders", "accounts", "account_ids", "referrals"}`:
`claimed` the claimed ids in claim order, `account_ids` every account asked for, directly or
through an order (those missing from `accounts` do not exist).

Revision ID: 0022
Revises: 0021
"""

import importlib.util
from pathlib import Path

from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

code_levels = (6, 7)

LOAD = r"""
CREATE OR REPLACE FUNCTION videocopies_load(reads jsonb) RETURNS json
LANGUAGE plpgsql
-- Every read here is by key or along a partial index, so one generic plan per statement serves
-- every call: planned once per session. Left to choose, PL/pgSQL kept planning most statements
-- on every call (their generic cost, with arrays of unknown length, looked dearer), about 40 %
-- of the function's time. And a plan made while a table was small (a fresh database: receipts
-- empty) would scan the table on every call after it grew, until the next ANALYZE: without
-- sequential scans that plan is never made.
SET enable_seqscan TO off
SET plan_cache_mode TO force_generic_plan
AS $fn$
DECLARE
    claim jsonb := reads->'claim';
    claimed text[] := '{}';
    job_ids text[];
    order_ids text[];
    user_ids bigint[];
    invitees bigint[];
    receipt_ids text[];
    found_receipts json := '[]';
    found_jobs json;
    found_orders json;
    found_accounts json;
    found_referrals json := '[]';
BEGIN
    IF reads ? 'receipts' THEN
        receipt_ids := ARRAY(SELECT jsonb_array_elements_text(reads->'receipts'));
        SELECT coalesce(json_agg(json_build_object('receipt_id', r.receipt_id, 'fingerprint', r.fingerprint,
                                                   'result', r.result)), '[]')
          INTO found_receipts
          FROM receipts r WHERE r.receipt_id = ANY(receipt_ids);
    END IF;

    IF claim IS NOT NULL THEN
        WITH lapsed AS (
            SELECT j.job_id FROM jobs j
             WHERE j.state = 'leased' AND j.lease_until <= (claim->>'now')::timestamptz
               AND j.source_bytes <= coalesce((claim->>'max_bytes')::bigint, j.source_bytes)
             ORDER BY j.lease_until LIMIT (claim->>'limit')::integer FOR UPDATE SKIP LOCKED
        ), queued AS (
            SELECT j.job_id FROM jobs j
             WHERE j.state = 'queued'
               AND j.source_bytes <= coalesce((claim->>'max_bytes')::bigint, j.source_bytes)
             ORDER BY j.created_at, j.job_id LIMIT (claim->>'limit')::integer FOR UPDATE SKIP LOCKED
        )
        -- Lapsed first: UNION ALL reads its arms in turn and stops at the limit, so queued rows
        -- are locked only as far as they are taken.
        SELECT coalesce(array_agg(t.job_id), '{}') INTO claimed
          FROM (SELECT job_id FROM lapsed UNION ALL SELECT job_id FROM queued
                LIMIT (claim->>'limit')::integer) t;
    END IF;

    job_ids := ARRAY(SELECT DISTINCT id FROM jsonb_array_elements_text(coalesce(reads->'jobs', '[]')) AS id
                      WHERE id <> ALL(claimed) ORDER BY id);
    PERFORM 1 FROM jobs j WHERE j.job_id = ANY(job_ids) ORDER BY j.job_id FOR UPDATE;
    job_ids := claimed || job_ids;
    SELECT coalesce(json_agg(to_jsonb(j) || jsonb_build_object(
               'checkpoints', (SELECT coalesce(jsonb_agg(to_jsonb(c) ORDER BY c.idx), '[]')
                                 FROM job_checkpoints c WHERE c.job_id = j.job_id))), '[]')
      INTO found_jobs
      FROM jobs j WHERE j.job_id = ANY(job_ids);

    order_ids := ARRAY(SELECT DISTINCT id FROM (
                           SELECT jsonb_array_elements_text(coalesce(reads->'orders', '[]')) AS id
                           UNION ALL
                           SELECT j.order_id FROM jobs j
                            WHERE coalesce((reads->>'their_orders')::boolean, false) AND j.job_id = ANY(job_ids)
                       ) wanted ORDER BY id);
    PERFORM 1 FROM orders o WHERE o.order_id = ANY(order_ids) ORDER BY o.order_id FOR UPDATE;
    SELECT coalesce(json_agg(row_to_json(o)), '[]') INTO found_orders
      FROM orders o WHERE o.order_id = ANY(order_ids);

    user_ids := ARRAY(SELECT DISTINCT id FROM (
                          SELECT jsonb_array_elements_text(coalesce(reads->'accounts', '[]'))::bigint AS id
                          UNION ALL
                          SELECT o.user_id FROM orders o
                           WHERE coalesce((reads->>'their_accounts')::boolean, false) AND o.order_id = ANY(order_ids)
                      ) wanted ORDER BY id);
    PERFORM 1 FROM coin_accounts a WHERE a.user_id = ANY(user_ids) ORDER BY a.user_id FOR UPDATE;
    SELECT coalesce(json_agg(json_build_object(
               'user_id', a.user_id,
               'version', a.version,
               'lots', (SELECT coalesce(json_agg(json_build_object(
                                   'lot_id', l.lot_id, 'kind', l.kind, 'amount', l.amount,
                                   'granted_at', l.granted_at, 'expires_at', l.expires_at,
                                   'available', l.available, 'debited', l.debited, 'expired', l.expired,
                                   'refunded', l.refunded)
                                 ORDER BY l.granted_at, l.lot_id), '[]')
                          FROM coin_lots l WHERE l.user_id = a.user_id),
               'reservations', (SELECT coalesce(json_agg(json_build_object(
                                   'order_id', r.order_id, 'amount', r.amount, 'debited', r.debited,
                                   'released', r.released,
                                   'holds', (SELECT coalesce(json_agg(json_build_array(h.lot_id, h.held)
                                                                      ORDER BY h.seq), '[]')
                                               FROM coin_holds h WHERE h.order_id = r.order_id),
                                   'keys', (SELECT coalesce(json_agg(d.key), '[]')
                                              FROM coin_debits d WHERE d.order_id = r.order_id))), '[]')
                                  FROM coin_reservations r WHERE r.user_id = a.user_id AND r.open))), '[]')
      INTO found_accounts
      FROM coin_accounts a WHERE a.user_id = ANY(user_ids);

    IF reads ? 'referrals' THEN
        invitees := ARRAY(SELECT DISTINCT id::bigint
                            FROM jsonb_array_elements_text(reads->'referrals') AS id ORDER BY 1);
        SELECT coalesce(json_agg(row_to_json(r)), '[]') INTO found_referrals
          FROM (SELECT * FROM referrals WHERE invitee = ANY(invitees) AND outcome IS NULL
                 ORDER BY invitee FOR UPDATE) r;
    END IF;

    RETURN json_build_object('receipts', found_receipts, 'claimed', to_json(claimed), 'jobs', found_jobs,
                             'orders', found_orders, 'accounts', found_accounts,
                             'account_ids', to_json(user_ids), 'referrals', found_referrals);
END
$fn$
"""


def _previous() -> str:
    """0015's function, as that revision froze it."""
    path = Path(__file__).with_name("0015_load_reads.py")
    spec = importlib.util.spec_from_file_location("_revision_0015", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text: str = module.LOAD
    return text.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)


def upgrade() -> None:
    op.execute(LOAD)


def downgrade() -> None:
    op.execute(_previous())
