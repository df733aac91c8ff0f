"""Each refusal raised from inside the database has its own SQLSTATE, with the key it is about
in its DETAIL, so the code tells them apart without parsing a message:
- 'VCL01' lease lost: a fenced job write (`update_job_fenced`) matched no row; DETAIL the job id;
- 'VCC01' capacity full: `take_slot` found no free slot; DETAIL the order id;
- 'VCS01' source gone: a quote or its confirmation names a source the object lifecycle has
  deleted or decided to delete (the trigger of 0021); DETAIL the source's key;
- 'VCW01' unknown write: videocopies_apply was given a write it does not know (a bug, never a
  refusal); DETAIL its name.
Before this revision all three refusals were SQLSTATE VC001 with a message `reason:query:key`.

Both functions are emitted whole, as they stand after this revision, and downgrade emits them
whole as they stood before (`pg_get_functiondef` of a database at 0022): no installed text is
patched. Code of level 7 reads VC001 only, so this revision accepts code level 8 alone.

Revision ID: 0023
Revises: 0022
"""

from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

code_levels = (8, 8)

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
            INSERT INTO coin_reservations (order_id, user_id, amount, debited, released, open)
            VALUES (r.order_id, r.user_id, r.amount, r.debited, r.released, r.open);
        ELSIF op_name = 'update_reservation' THEN
            r := jsonb_populate_record(NULL::coin_reservations, p);
            UPDATE coin_reservations SET debited = r.debited, released = r.released, open = r.open
             WHERE order_id = r.order_id;
        ELSIF op_name = 'upsert_hold' THEN
            INSERT INTO coin_holds (order_id, seq, lot_id, held)
            VALUES (p->>'order_id', (p->>'seq')::smallint, p->>'lot_id', (p->>'held')::integer)
                ON CONFLICT (order_id, seq) DO UPDATE SET held = excluded.held;
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

QUOTE_TAKES_SOURCE = r"""
CREATE OR REPLACE FUNCTION videocopies_quote_takes_source()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    source stored_objects%ROWTYPE;
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT * INTO source FROM stored_objects WHERE key = NEW.source_key FOR KEY SHARE;
    ELSE  -- the order's row is locked by now: the duty locks it too (see above)
        SELECT * INTO source FROM stored_objects WHERE key = NEW.source_key;
    END IF;
    IF NOT FOUND THEN
        IF NEW.source_key LIKE 'sources/%' THEN
            INSERT INTO stored_objects (key, kind, user_id, size, state, stored_at)
            VALUES (NEW.source_key, 'source', NEW.user_id, NEW.source_bytes, 'stored', now())
                ON CONFLICT (key) DO NOTHING;
        END IF;
        RETURN NEW;
    END IF;
    IF source.state = 'deleted' OR source.deleted_at IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'VCS01', MESSAGE = 'source gone: ' || NEW.source_key,
                              DETAIL = NEW.source_key;
    END IF;
    IF source.released_at IS NOT NULL THEN
        UPDATE stored_objects SET released_at = NULL WHERE key = NEW.source_key;
    END IF;
    RETURN NEW;
END
$function$
"""

# As they stood at 0022.
APPLY_BEFORE = r"""
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
                RAISE EXCEPTION USING ERRCODE = 'VC001', MESSAGE = 'lease_lost:update_job_fenced:' || j.job_id;
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
            INSERT INTO coin_reservations (order_id, user_id, amount, debited, released, open)
            VALUES (r.order_id, r.user_id, r.amount, r.debited, r.released, r.open);
        ELSIF op_name = 'update_reservation' THEN
            r := jsonb_populate_record(NULL::coin_reservations, p);
            UPDATE coin_reservations SET debited = r.debited, released = r.released, open = r.open
             WHERE order_id = r.order_id;
        ELSIF op_name = 'upsert_hold' THEN
            INSERT INTO coin_holds (order_id, seq, lot_id, held)
            VALUES (p->>'order_id', (p->>'seq')::smallint, p->>'lot_id', (p->>'held')::integer)
                ON CONFLICT (order_id, seq) DO UPDATE SET held = excluded.held;
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
                RAISE EXCEPTION USING ERRCODE = 'VC001', MESSAGE = 'capacity:take_slot:' || (p->>'order_id');
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
            RAISE EXCEPTION 'videocopies_apply: unknown write %', op_name;
        END IF;
    END LOOP;
END
$function$
"""

QUOTE_TAKES_SOURCE_BEFORE = r"""
CREATE OR REPLACE FUNCTION videocopies_quote_takes_source()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    source stored_objects%ROWTYPE;
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT * INTO source FROM stored_objects WHERE key = NEW.source_key FOR KEY SHARE;
    ELSE  -- the order's row is locked by now: the duty locks it too (see above)
        SELECT * INTO source FROM stored_objects WHERE key = NEW.source_key;
    END IF;
    IF NOT FOUND THEN
        IF NEW.source_key LIKE 'sources/%' THEN
            INSERT INTO stored_objects (key, kind, user_id, size, state, stored_at)
            VALUES (NEW.source_key, 'source', NEW.user_id, NEW.source_bytes, 'stored', now())
                ON CONFLICT (key) DO NOTHING;
        END IF;
        RETURN NEW;
    END IF;
    IF source.state = 'deleted' OR source.deleted_at IS NOT NULL THEN
        RAISE EXCEPTION 'conflict:source_gone:%', NEW.source_key USING ERRCODE = 'VC001';
    END IF;
    IF source.released_at IS NOT NULL THEN
        UPDATE stored_objects SET released_at = NULL WHERE key = NEW.source_key;
    END IF;
    RETURN NEW;
END
$function$
"""


def upgrade() -> None:
    op.execute(APPLY)
    op.execute(QUOTE_TAKES_SOURCE)


def downgrade() -> None:
    op.execute(APPLY_BEFORE)
    op.execute(QUOTE_TAKES_SOURCE_BEFORE)
