"""A confirmation's opening read starts fewer statements: `videocopies_load` takes one id asked
for alone (an order, an account, a referral's invitee) as it is, where it ran a statement to
gather, sort and dedupe a list of one, and it looks a list of keys up along its index without
a bitmap.

The server's CPU went mostly to starting statements, not running them (perf, a wave of 1,000
confirmations: a third of the function's time in the executor's start, half of that in the
aggregates and the dedupe). Started a thousand times on one connection, a confirmation's load
cost 350 µs of server CPU before and 270 µs after (medians of 8 rounds; `bench/confirm_wave.py`
for the wave).

The function returns the same rows in the same order for every input, so code of level 13
runs on either side of this revision. It is emitted whole, as it stands after this revision;
downgrade emits 0027's whole.

Revision ID: 0031
Revises: 0030
"""

import importlib.util
from pathlib import Path

from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None

code_levels = (13, 13)

LOAD = r"""CREATE OR REPLACE FUNCTION videocopies_load(reads jsonb) RETURNS json
LANGUAGE plpgsql
-- Every read here is by key or along a partial index, so one generic plan per statement serves
-- every call: planned once per session. Left to choose, PL/pgSQL kept planning most statements
-- on every call (their generic cost, with arrays of unknown length, looked dearer), about 40 %
-- of the function's time. And a plan made while a table was small (a fresh database: receipts
-- empty) would scan the table on every call after it grew, until the next ANALYZE: without
-- sequential scans that plan is never made. Without bitmap scans a key list is looked up along
-- its index one key at a time, which is cheaper to start than a bitmap for the few keys a call
-- names (migration 0031).
SET enable_seqscan TO off
SET enable_bitmapscan TO off
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
    lot_ids text[];  -- NULL: every lot of each account (code of level 10 asks no `lots`)
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

    -- A kind nobody asked for is passed over without a statement: each one run costs the server
    -- about as much as a short read, whether it finds rows or not.
    IF claim IS NULL AND jsonb_array_length(coalesce(reads->'jobs', '[]')) = 0 THEN
        job_ids := '{}';
        found_jobs := '[]';
    ELSE
        job_ids := ARRAY(SELECT DISTINCT id FROM jsonb_array_elements_text(coalesce(reads->'jobs', '[]')) AS id
                          WHERE id <> ALL(claimed) ORDER BY id);
        PERFORM 1 FROM jobs j WHERE j.job_id = ANY(job_ids) ORDER BY j.job_id FOR UPDATE;
        job_ids := claimed || job_ids;
        SELECT coalesce(json_agg(to_jsonb(j) || jsonb_build_object(
                   'checkpoints', (SELECT coalesce(jsonb_agg(to_jsonb(c) ORDER BY c.idx), '[]')
                                     FROM job_checkpoints c WHERE c.job_id = j.job_id))), '[]')
          INTO found_jobs
          FROM jobs j WHERE j.job_id = ANY(job_ids);
    END IF;

    IF jsonb_array_length(coalesce(reads->'orders', '[]')) = 0
       AND NOT (coalesce((reads->>'their_orders')::boolean, false) AND cardinality(job_ids) > 0) THEN
        order_ids := '{}';
        found_orders := '[]';
    ELSE
        -- One id, asked for alone (a confirmation, a cancel): the id itself, without the
        -- statement that gathers, sorts and dedupes a list (its start costs more than its run).
        IF jsonb_array_length(coalesce(reads->'orders', '[]')) = 1
           AND NOT (coalesce((reads->>'their_orders')::boolean, false) AND cardinality(job_ids) > 0) THEN
            order_ids := ARRAY[reads->'orders'->>0];
        ELSE
            order_ids := ARRAY(SELECT DISTINCT id FROM (
                                   SELECT jsonb_array_elements_text(coalesce(reads->'orders', '[]')) AS id
                                   UNION ALL
                                   SELECT j.order_id FROM jobs j
                                    WHERE coalesce((reads->>'their_orders')::boolean, false) AND j.job_id = ANY(job_ids)
                               ) wanted ORDER BY id);
        END IF;
        PERFORM 1 FROM orders o WHERE o.order_id = ANY(order_ids) ORDER BY o.order_id FOR UPDATE;
        SELECT coalesce(json_agg(row_to_json(o)), '[]') INTO found_orders
          FROM orders o WHERE o.order_id = ANY(order_ids);
    END IF;

    IF jsonb_array_length(coalesce(reads->'accounts', '[]')) = 0
       AND NOT (coalesce((reads->>'their_accounts')::boolean, false) AND cardinality(order_ids) > 0) THEN
        user_ids := '{}';
        found_accounts := '[]';
    ELSE
        IF jsonb_array_length(coalesce(reads->'accounts', '[]')) = 1
           AND NOT (coalesce((reads->>'their_accounts')::boolean, false) AND cardinality(order_ids) > 0) THEN
            user_ids := ARRAY[(reads->'accounts'->>0)::bigint];
        ELSE
            user_ids := ARRAY(SELECT DISTINCT id FROM (
                                  SELECT jsonb_array_elements_text(coalesce(reads->'accounts', '[]'))::bigint AS id
                                  UNION ALL
                                  SELECT o.user_id FROM orders o
                                   WHERE coalesce((reads->>'their_accounts')::boolean, false)
                                     AND o.order_id = ANY(order_ids)
                              ) wanted ORDER BY id);
        END IF;
        PERFORM 1 FROM coin_accounts a WHERE a.user_id = ANY(user_ids) ORDER BY a.user_id FOR UPDATE;
        IF jsonb_array_length(coalesce(reads->'lots', '[]')) > 0 THEN
            lot_ids := ARRAY(SELECT jsonb_array_elements_text(reads->'lots'));
        ELSIF reads ? 'lots' THEN
            lot_ids := '{}';
        END IF;
        SELECT coalesce(json_agg(json_build_object(
                   'user_id', a.user_id,
                   'version', a.version,
                   'lots', w.lots,
                   'all_lots', w.all_lots,
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
          FROM coin_accounts a,
               -- One pass over the account's lots: the working ones as objects, every one in the
               -- totals. The held lots' ids are read only when a lot with nothing available is met.
               LATERAL (SELECT coalesce(json_agg(json_build_object(
                                   'lot_id', l.lot_id, 'kind', l.kind, 'amount', l.amount,
                                   'granted_at', l.granted_at, 'expires_at', l.expires_at,
                                   'available', l.available, 'debited', l.debited, 'expired', l.expired,
                                   'refunded', l.refunded)
                                 ORDER BY l.granted_at, l.lot_id)
                                 FILTER (WHERE lot_ids IS NULL OR l.available > 0 OR l.lot_id = ANY(lot_ids)
                                            OR l.lot_id = ANY(ARRAY(
                                                   SELECT h.lot_id FROM coin_reservations r
                                                     JOIN coin_holds h ON h.order_id = r.order_id
                                                    WHERE r.user_id = a.user_id AND r.open))), '[]') AS lots,
                               json_build_array(coalesce(sum(l.amount), 0), coalesce(sum(l.debited), 0),
                                                coalesce(sum(l.expired + l.available), 0),
                                                coalesce(sum(l.refunded), 0)) AS all_lots
                          FROM coin_lots l WHERE l.user_id = a.user_id) w
         WHERE a.user_id = ANY(user_ids);
    END IF;

    IF reads ? 'referrals' THEN
        IF jsonb_array_length(reads->'referrals') = 1 THEN
            invitees := ARRAY[(reads->'referrals'->>0)::bigint];
        ELSE
            invitees := ARRAY(SELECT DISTINCT id::bigint
                                FROM jsonb_array_elements_text(reads->'referrals') AS id ORDER BY 1);
        END IF;
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
    """0027's function, as that revision froze it."""
    path = Path(__file__).with_name("0027_working_lots.py")
    spec = importlib.util.spec_from_file_location("_revision_0027", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text: str = module.LOAD
    return text


def upgrade() -> None:
    op.execute(LOAD)


def downgrade() -> None:
    op.execute(_previous())
