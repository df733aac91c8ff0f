"""One server-side function that persists a unit of work's whole write set.

The unit of work sends the writes its aggregates decided as one JSON array of
`[name, params]` pairs; `videocopies_apply` runs them in that order as the same statements
`queries.sql` names. A PL/pgSQL function keeps each statement's plan for the life of the
server session, so the plans survive PgBouncer's transaction pooling, and the whole write
set and its COMMIT travel in one simple query. The function decides nothing: it writes
what it is given, and it refuses (SQLSTATE VC001, as videocopies_require does) a fenced job
write that matched no row or a capacity slot that could not be taken.

Jobs rows also stay uncompressed up to 4 kB: five copies' effects plans make a row of about
2.4 kB, just over the default 2 kB at which PostgreSQL compresses it with pglz on every
insert (and decompresses it on every load); measured, that was a third of the insert's time.

Revision ID: 0009
Revises: 0008
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

code_levels = (1, 1)


APPLY = r"""
CREATE FUNCTION videocopies_apply(writes jsonb) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    w jsonb;
    op_name text;
    p jsonb;
    changed bigint;
    l coin_lots;
    r coin_reservations;
    o orders;
    j jobs;
    c job_checkpoints;
BEGIN
    FOR w IN SELECT value FROM jsonb_array_elements(writes) LOOP
        op_name := w->>0;
        p := w->1;
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
            UPDATE coin_lots SET available = l.available, debited = l.debited, expired = l.expired
             WHERE lot_id = l.lot_id;
        ELSIF op_name = 'insert_lot' THEN
            l := jsonb_populate_record(NULL::coin_lots, p);
            INSERT INTO coin_lots (lot_id, user_id, kind, amount, granted_at, expires_at, available, debited,
                                   expired)
            VALUES (l.lot_id, l.user_id, l.kind, l.amount, l.granted_at, l.expires_at, l.available, l.debited,
                    l.expired);
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
                                         created_at)
            VALUES (c.job_id, c.idx, c.object_key, c.size, c.sha256, c.duration_s, c.width, c.height,
                    c.created_at);
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
        ELSE
            RAISE EXCEPTION 'videocopies_apply: unknown write %', op_name;
        END IF;
    END LOOP;
END
$fn$
"""


def upgrade() -> None:
    op.execute(APPLY)
    op.execute("ALTER TABLE jobs SET (toast_tuple_target = 4080)")


def downgrade() -> None:
    op.execute("ALTER TABLE jobs RESET (toast_tuple_target)")
    op.execute("DROP FUNCTION videocopies_apply(jsonb)")
