"""A reservation keeps its holds in its own row: `coin_reservations.holds`, a list of
`[lot_id, held]` in the order they were taken, where each hold was a row of `coin_holds`.

A confirmation wrote a hold row beside its reservation, with two foreign-key checks and an index
entry of its own, and every settlement of an order wrote it again; the opening read gathered the
holds with a statement per reservation. Replayed bare, a wave of confirmations without the hold
rows took 0.83 of the time with them (docs/decisions/0007). Now a confirmation writes the
reservation alone, and the load reads the list with the row.

What the rows' constraints held is held by the domain, which takes every hold from a lot it loaded
under the account's lock, and checked by the ledger audit: each hold's lot exists and is the
same user's, none is negative, and a reservation holds what it has left.

Code of level 13 reads the holds through `videocopies_load` (emitted here, reading the column), and
through `coin_holds`, which this revision turns into a view of the column. It writes each hold on
its own (`upsert_hold`), which `videocopies_apply` now writes into the list, so it runs on either
side of this revision. Code of level 14 sends the list with its reservation and never reads the
view; a later revision that no longer admits level 13 can drop it.

The upgrade writes every reservation once, in one transaction: about 10 s a million reservations
on the benchmarks' durable server, while confirmations and settlements wait for it (going down:
16 s a million). Both functions are emitted whole, as they stand after this revision; downgrade
emits 0023's apply and 0031's load, and puts the rows back.

Revision ID: 0033
Revises: 0032
"""

import importlib.util
from pathlib import Path

from alembic import op

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None

code_levels = (13, 14)

_MOVE_IN = """
ALTER TABLE coin_reservations ADD COLUMN holds jsonb NOT NULL DEFAULT '[]';
UPDATE coin_reservations r SET holds = h.holds
  FROM (SELECT order_id, jsonb_agg(jsonb_build_array(lot_id, held) ORDER BY seq) AS holds
          FROM coin_holds GROUP BY order_id) h
 WHERE h.order_id = r.order_id;
DROP TABLE coin_holds;
CREATE VIEW coin_holds AS
SELECT r.order_id, (h.seq - 1)::smallint AS seq, h.hold->>0 AS lot_id, (h.hold->>1)::integer AS held
  FROM coin_reservations r, jsonb_array_elements(r.holds) WITH ORDINALITY AS h(hold, seq);
"""

# The table as 0001 made it, and its rows from the lists.
_MOVE_OUT = """
DROP VIEW coin_holds;
CREATE TABLE coin_holds (
    order_id text NOT NULL,
    seq smallint NOT NULL,
    lot_id text NOT NULL,
    held integer NOT NULL,
    CONSTRAINT pk_coin_holds PRIMARY KEY (order_id, seq),
    CONSTRAINT fk_coin_holds_order_id_coin_reservations FOREIGN KEY (order_id)
        REFERENCES coin_reservations (order_id),
    CONSTRAINT fk_coin_holds_lot_id_coin_lots FOREIGN KEY (lot_id) REFERENCES coin_lots (lot_id),
    CONSTRAINT ck_coin_holds_not_negative CHECK (held >= 0)
);
INSERT INTO coin_holds (order_id, seq, lot_id, held)
SELECT r.order_id, h.seq - 1, h.hold->>0, (h.hold->>1)::integer
  FROM coin_reservations r, jsonb_array_elements(r.holds) WITH ORDINALITY AS h(hold, seq);
ALTER TABLE coin_reservations DROP COLUMN holds;
"""

APPLY = r"""
CREATE OR REPLACE FUNCTION videocopies_apply(writes jsonb)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
DECLARE
    i integer;
    op_name text;
    p jsonb;
    changed bigint;
    l coin_lots;
    r coin_reservations;
    o orders;
    j jobs;
    c job_checkpoints;
BEGIN
    FOR i IN 0 .. jsonb_array_length(writes) - 1 LOOP
        op_name := writes->i->>0;
        p := writes->i->1;
        IF op_name = 'update_job_fenced' THEN
            j := jsonb_populate_record(NULL::jobs, p);
            UPDATE jobs SET state = j.state, attempts = j.attempts, cancel_requested = j.cancel_requested,
                            worker_id = j.worker_id, owner_token = j.owner_token,
                            acquired_at = j.acquired_at, lease_until = j.lease_until,
                            last_error = j.last_error, version = j.version, closed_by = j.closed_by
             WHERE job_id = j.job_id AND version = (p->>'loaded')::integer
               AND owner_token = p->>'fence' AND lease_until > now();
            GET DIAGNOSTICS changed = ROW_COUNT;
            IF changed <> 1 THEN
                RAISE EXCEPTION USING ERRCODE = 'VCL01', MESSAGE = 'lease lost on job ' || j.job_id,
                                      DETAIL = j.job_id;
            END IF;
        ELSIF op_name = 'update_job' THEN
            j := jsonb_populate_record(NULL::jobs, p);
            UPDATE jobs SET state = j.state, attempts = j.attempts, cancel_requested = j.cancel_requested,
                            worker_id = j.worker_id, owner_token = j.owner_token,
                            acquired_at = j.acquired_at, lease_until = j.lease_until,
                            last_error = j.last_error, version = j.version, closed_by = j.closed_by
             WHERE job_id = j.job_id AND version = (p->>'loaded')::integer;
        ELSIF op_name = 'insert_job' THEN
            j := jsonb_populate_record(NULL::jobs, p);
            INSERT INTO jobs (job_id, order_id, state, plans, max_attempts, attempts, cancel_requested,
                              worker_id, owner_token, acquired_at, lease_until, last_error, created_at,
                              version, closed_by, source_bytes)
            VALUES (j.job_id, j.order_id, j.state, j.plans, j.max_attempts, j.attempts, j.cancel_requested,
                    j.worker_id, j.owner_token, j.acquired_at, j.lease_until, j.last_error, j.created_at,
                    j.version, j.closed_by, j.source_bytes);
        ELSIF op_name = 'update_lot' THEN
            l := jsonb_populate_record(NULL::coin_lots, p);
            UPDATE coin_lots SET available = l.available, debited = l.debited, expired = l.expired, refunded = l.refunded
             WHERE lot_id = l.lot_id;
        ELSIF op_name = 'insert_lot' THEN
            l := jsonb_populate_record(NULL::coin_lots, p);
            INSERT INTO coin_lots (lot_id, user_id, kind, amount, granted_at, expires_at, available, debited,
                                   expired, refunded)
            VALUES (l.lot_id, l.user_id, l.kind, l.amount, l.granted_at, l.expires_at, l.available, l.debited,
                    l.expired, l.refunded);
        ELSIF op_name = 'update_account_version' THEN
            UPDATE coin_accounts SET version = (p->>'version')::integer
             WHERE user_id = (p->>'user_id')::bigint AND version = (p->>'loaded')::integer;
        ELSIF op_name = 'insert_account' THEN
            INSERT INTO coin_accounts (user_id, version, created_at)
            VALUES ((p->>'user_id')::bigint, (p->>'version')::integer, (p->>'now')::timestamptz);
        ELSIF op_name = 'insert_reservation' THEN
            r := jsonb_populate_record(NULL::coin_reservations, p);
            -- Code of level 13 sends no `holds` here: its holds follow one by one (`upsert_hold`).
            INSERT INTO coin_reservations (order_id, user_id, amount, debited, released, open, holds)
            VALUES (r.order_id, r.user_id, r.amount, r.debited, r.released, r.open, coalesce(r.holds, '[]'));
        ELSIF op_name = 'update_reservation' THEN
            r := jsonb_populate_record(NULL::coin_reservations, p);
            UPDATE coin_reservations SET debited = r.debited, released = r.released, open = r.open,
                                         holds = coalesce(r.holds, coin_reservations.holds)
             WHERE order_id = r.order_id;
        ELSIF op_name = 'upsert_hold' THEN
            -- Code of level 13 writes a reservation's holds one at a time, in the order of their seq:
            -- each replaces its place in the list, or is added at its end.
            UPDATE coin_reservations
               SET holds = CASE WHEN (p->>'seq')::integer < jsonb_array_length(holds)
                                THEN jsonb_set(holds, ARRAY[p->>'seq'],
                                               jsonb_build_array(p->>'lot_id', (p->>'held')::integer))
                                ELSE holds || jsonb_build_array(jsonb_build_array(p->>'lot_id', (p->>'held')::integer))
                           END
             WHERE order_id = p->>'order_id';
        ELSIF op_name = 'insert_debit' THEN
            INSERT INTO coin_debits (order_id, key) VALUES (p->>'order_id', p->>'key');
        ELSIF op_name = 'insert_order' THEN
            o := jsonb_populate_record(NULL::orders, p);
            INSERT INTO orders (order_id, user_id, source_key, copies, price_per_copy, total, tariff_version,
                                quote_expires_at, quote_token, seed, state, copy_states, failure_reason,
                                created_at, version, source_bytes)
            VALUES (o.order_id, o.user_id, o.source_key, o.copies, o.price_per_copy, o.total, o.tariff_version,
                    o.quote_expires_at, o.quote_token, o.seed, o.state, o.copy_states, o.failure_reason,
                    o.created_at, o.version, o.source_bytes);
        ELSIF op_name = 'update_order' THEN
            o := jsonb_populate_record(NULL::orders, p);
            UPDATE orders SET state = o.state, copy_states = o.copy_states, failure_reason = o.failure_reason,
                              version = o.version
             WHERE order_id = o.order_id AND version = (p->>'loaded')::integer;
        ELSIF op_name = 'take_slot' THEN
            UPDATE capacity_slots SET order_id = p->>'order_id'
             WHERE slot_id = (SELECT slot_id FROM capacity_slots WHERE order_id IS NULL
                               ORDER BY slot_id LIMIT 1 FOR UPDATE SKIP LOCKED);
            GET DIAGNOSTICS changed = ROW_COUNT;
            IF changed <> 1 THEN
                RAISE EXCEPTION USING ERRCODE = 'VCC01',
                                      MESSAGE = 'no free capacity slot for order ' || (p->>'order_id'),
                                      DETAIL = p->>'order_id';
            END IF;
        ELSIF op_name = 'free_slot' THEN
            UPDATE capacity_slots SET order_id = NULL WHERE order_id = p->>'order_id';
        ELSIF op_name = 'insert_checkpoint' THEN
            c := jsonb_populate_record(NULL::job_checkpoints, p);
            INSERT INTO job_checkpoints (job_id, idx, object_key, size, sha256, duration_s, width, height,
                                         created_at, quality, failure)
            VALUES (c.job_id, c.idx, c.object_key, c.size, c.sha256, c.duration_s, c.width, c.height,
                    c.created_at, c.quality, c.failure);
        ELSIF op_name = 'insert_receipt' THEN
            INSERT INTO receipts (receipt_id, fingerprint, result, created_at)
            VALUES (p->>'receipt_id', p->>'fingerprint', p->'result', now());
        ELSIF op_name = 'insert_outbox' THEN
            INSERT INTO outbox (user_id, kind, payload, dedup_key, created_at)
            VALUES ((p->>'user_id')::bigint, p->>'kind', p->'payload', p->>'dedup_key', now())
                ON CONFLICT (dedup_key) DO NOTHING;
        ELSIF op_name = 'insert_refused_write' THEN
            INSERT INTO refused_writes (job_id, worker_id, operation, reason, at)
            VALUES (p->>'job_id', p->>'worker_id', p->>'operation', p->>'reason', (p->>'at')::timestamptz);
        ELSIF op_name = 'insert_payment' THEN
            INSERT INTO payments (external_id, user_id, coins, paid_amount, currency, received_at)
            VALUES (p->>'external_id', (p->>'user_id')::bigint, (p->>'coins')::integer,
                    (p->>'paid_amount')::integer, p->>'currency', (p->>'received_at')::timestamptz);
        ELSIF op_name = 'insert_referral' THEN
            INSERT INTO referrals (invitee, inviter, at)
            VALUES ((p->>'invitee')::bigint, (p->>'inviter')::bigint, (p->>'at')::timestamptz);
        ELSIF op_name = 'insert_grant' THEN
            INSERT INTO coin_grants (lot_id, user_id, kind, amount, granted_by, reason, granted_at)
            VALUES (p->>'lot_id', (p->>'user_id')::bigint, p->>'kind', (p->>'amount')::integer,
                    p->>'granted_by', p->>'reason', (p->>'granted_at')::timestamptz);
        ELSIF op_name = 'upsert_refund' THEN
            INSERT INTO refunds (external_id, user_id, coins, requested_by, reason, requested_at, state,
                                 finished_at, provider_answer)
            VALUES (p->>'external_id', (p->>'user_id')::bigint, (p->>'coins')::integer, p->>'requested_by',
                    p->>'reason', (p->>'requested_at')::timestamptz, p->>'state',
                    (p->>'finished_at')::timestamptz, p->>'provider_answer')
                ON CONFLICT (external_id) DO UPDATE
               SET coins = excluded.coins, requested_by = excluded.requested_by, reason = excluded.reason,
                   requested_at = excluded.requested_at, state = excluded.state,
                   finished_at = excluded.finished_at, provider_answer = excluded.provider_answer;
        ELSIF op_name = 'insert_accounts' THEN
            INSERT INTO coin_accounts (user_id, version, created_at)
            SELECT na.user_id, na.version, na.now
              FROM jsonb_to_recordset(p) AS na(user_id bigint, version integer, now timestamptz);
        ELSIF op_name = 'insert_lots' THEN
            INSERT INTO coin_lots (lot_id, user_id, kind, amount, granted_at, expires_at, available, debited,
                                   expired, refunded)
            SELECT nl.lot_id, nl.user_id, nl.kind, nl.amount, nl.granted_at, nl.expires_at, nl.available,
                   nl.debited, nl.expired, nl.refunded
              FROM jsonb_populate_recordset(NULL::coin_lots, p) AS nl;
        ELSIF op_name = 'insert_claim' THEN
            INSERT INTO payment_claims (external_id, user_id, paid_amount, currency, invoice_payload, node,
                                        claimed_at)
            VALUES (p->>'external_id', (p->>'user_id')::bigint, (p->>'paid_amount')::integer, p->>'currency',
                    p->>'invoice_payload', p->>'node', (p->>'claimed_at')::timestamptz)
                ON CONFLICT (external_id) DO NOTHING;
        ELSIF op_name = 'record_charges' THEN
            INSERT INTO provider_charges (external_id, user_id, paid_amount, currency, invoice_payload, read_at)
            SELECT nc.external_id, nc.user_id, nc.paid_amount, nc.currency, nc.invoice_payload, nc.read_at
              FROM jsonb_populate_recordset(NULL::provider_charges, p) AS nc
                ON CONFLICT (external_id) DO NOTHING;
        ELSIF op_name = 'move_provider_cursor' THEN
            INSERT INTO provider_cursor (provider, position, read_at)
            VALUES (p->>'provider', (p->>'position')::bigint, (p->>'read_at')::timestamptz)
                ON CONFLICT (provider) DO UPDATE
               SET position = GREATEST(provider_cursor.position, excluded.position), read_at = excluded.read_at;
        ELSIF op_name = 'insert_reversal' THEN
            INSERT INTO payment_reversals (external_id, user_id, taken, owed, reason, reversed_at)
            VALUES (p->>'external_id', (p->>'user_id')::bigint, (p->>'taken')::integer, (p->>'owed')::integer,
                    p->>'reason', (p->>'reversed_at')::timestamptz);
        ELSIF op_name = 'end_lot' THEN
            UPDATE coin_lots SET expires_at = (p->>'expires_at')::timestamptz WHERE lot_id = p->>'lot_id';
        ELSIF op_name = 'settle_referral' THEN
            UPDATE referrals SET outcome = p->>'outcome', settled_at = (p->>'settled_at')::timestamptz
             WHERE invitee = (p->>'invitee')::bigint AND outcome IS NULL;
        ELSE
            RAISE EXCEPTION USING ERRCODE = 'VCW01', MESSAGE = 'videocopies_apply: unknown write ' || op_name,
                                  DETAIL = op_name;
        END IF;
    END LOOP;
END
$function$
"""

LOAD = r"""
CREATE OR REPLACE FUNCTION videocopies_load(reads jsonb) RETURNS json
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
                                       'holds', r.holds,
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
                                                   SELECT h.hold->>0
                                                     FROM coin_reservations r, jsonb_array_elements(r.holds) h(hold)
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


def _frozen(module_file: str, name: str) -> str:
    """A text as an earlier revision froze it."""
    path = Path(__file__).with_name(module_file)
    spec = importlib.util.spec_from_file_location(f"_revision_{module_file[:4]}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text: str = getattr(module, name)
    return text


def upgrade() -> None:
    op.execute(_MOVE_IN)
    op.execute(APPLY)
    op.execute(LOAD)


def downgrade() -> None:
    op.execute(_MOVE_OUT)
    op.execute(_frozen("0023_refusals_by_sqlstate.py", "APPLY"))
    op.execute(_frozen("0031_load_starts_less.py", "LOAD"))
