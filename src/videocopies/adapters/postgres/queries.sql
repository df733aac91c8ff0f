-- load_account --
-- A user's account with every lot and its open reservations, locking only this user's row.
-- If the row lock had to wait, the lots were read from before the other writer committed:
-- `seen_version` (read from that same old snapshot) then differs, and the load runs again:
-- a new statement, a new snapshot, the lock already ours.
SELECT a.version,
       (SELECT s.version FROM coin_accounts s WHERE s.user_id = a.user_id) AS seen_version,
       (SELECT coalesce(json_agg(json_build_object(
                   'lot_id', l.lot_id, 'kind', l.kind, 'amount', l.amount,
                   'granted_at', l.granted_at, 'expires_at', l.expires_at,
                   'available', l.available, 'debited', l.debited, 'expired', l.expired,
                   'refunded', l.refunded)
                 ORDER BY l.granted_at, l.lot_id), '[]')
          FROM coin_lots l WHERE l.user_id = a.user_id) AS lots,
       (SELECT coalesce(json_agg(json_build_object(
                   'order_id', r.order_id, 'amount', r.amount, 'debited', r.debited,
                   'released', r.released,
                   'holds', (SELECT coalesce(json_agg(json_build_array(h.lot_id, h.held) ORDER BY h.seq), '[]')
                               FROM coin_holds h WHERE h.order_id = r.order_id),
                   'keys', (SELECT coalesce(json_agg(d.key), '[]')
                              FROM coin_debits d WHERE d.order_id = r.order_id))), '[]')
          FROM coin_reservations r WHERE r.user_id = a.user_id AND r.open) AS reservations
  FROM coin_accounts a
 WHERE a.user_id = %(user_id)s
   FOR UPDATE OF a;

-- insert_account --
INSERT INTO coin_accounts (user_id, version, created_at) VALUES (%(user_id)s, %(version)s, %(now)s);

-- update_account_version --
-- Optimistic check: the row is locked, so a mismatch means the aggregate was written meanwhile.
UPDATE coin_accounts SET version = %(version)s WHERE user_id = %(user_id)s AND version = %(loaded)s;

-- insert_lot --
INSERT INTO coin_lots (lot_id, user_id, kind, amount, granted_at, expires_at, available, debited, expired,
                       refunded)
VALUES (%(lot_id)s, %(user_id)s, %(kind)s, %(amount)s, %(granted_at)s, %(expires_at)s,
        %(available)s, %(debited)s, %(expired)s, %(refunded)s);

-- update_lot --
UPDATE coin_lots SET available = %(available)s, debited = %(debited)s, expired = %(expired)s,
                     refunded = %(refunded)s
 WHERE lot_id = %(lot_id)s;

-- insert_reservation --
INSERT INTO coin_reservations (order_id, user_id, amount, debited, released, open)
VALUES (%(order_id)s, %(user_id)s, %(amount)s, %(debited)s, %(released)s, %(open)s);

-- update_reservation --
UPDATE coin_reservations SET debited = %(debited)s, released = %(released)s, open = %(open)s
 WHERE order_id = %(order_id)s;

-- upsert_hold --
INSERT INTO coin_holds (order_id, seq, lot_id, held) VALUES (%(order_id)s, %(seq)s, %(lot_id)s, %(held)s)
    ON CONFLICT (order_id, seq) DO UPDATE SET held = excluded.held;

-- insert_debit --
INSERT INTO coin_debits (order_id, key) VALUES (%(order_id)s, %(key)s);

-- accounts_with_expiring_lots --
-- Accounts holding available coins in lots past their expiry, for the expiry sweep.
SELECT DISTINCT user_id FROM coin_lots
 WHERE expires_at <= %(now)s AND available > 0 AND expires_at IS NOT NULL
 LIMIT %(limit)s;

-- load_order --
SELECT * FROM orders WHERE order_id = %(order_id)s FOR UPDATE;

-- insert_order --
INSERT INTO orders (order_id, user_id, source_key, copies, price_per_copy, total, tariff_version,
                    quote_expires_at, quote_token, seed, state, copy_states, failure_reason,
                    created_at, version, source_bytes)
VALUES (%(order_id)s, %(user_id)s, %(source_key)s, %(copies)s, %(price_per_copy)s, %(total)s,
        %(tariff_version)s, %(quote_expires_at)s, %(quote_token)s, %(seed)s, %(state)s,
        %(copy_states)s, %(failure_reason)s, %(created_at)s, %(version)s, %(source_bytes)s);

-- update_order --
UPDATE orders SET state = %(state)s, copy_states = %(copy_states)s, failure_reason = %(failure_reason)s,
                  version = %(version)s
 WHERE order_id = %(order_id)s AND version = %(loaded)s;

-- load_job_for_order --
SELECT j.*, (SELECT s.version FROM jobs s WHERE s.job_id = j.job_id) AS seen_version,
       (SELECT coalesce(json_agg(c ORDER BY c.idx), '[]') FROM job_checkpoints c
         WHERE c.job_id = j.job_id) AS checkpoints
  FROM jobs j WHERE j.order_id = %(order_id)s FOR UPDATE OF j;

-- expired_leases --
-- The sweep: leases that ran out, soonest first, skipping rows a claimer already holds.
SELECT job_id FROM jobs WHERE state = 'leased' AND lease_until <= %(now)s
 ORDER BY lease_until LIMIT %(limit)s FOR UPDATE SKIP LOCKED;

-- insert_job --
INSERT INTO jobs (job_id, order_id, state, plans, max_attempts, attempts, cancel_requested, worker_id,
                  owner_token, acquired_at, lease_until, last_error, created_at, version, closed_by,
                  source_bytes)
VALUES (%(job_id)s, %(order_id)s, %(state)s, %(plans)s, %(max_attempts)s, %(attempts)s,
        %(cancel_requested)s, %(worker_id)s, %(owner_token)s, %(acquired_at)s, %(lease_until)s,
        %(last_error)s, %(created_at)s, %(version)s, %(closed_by)s, %(source_bytes)s);

-- update_job --
UPDATE jobs SET state = %(state)s, attempts = %(attempts)s, cancel_requested = %(cancel_requested)s,
                worker_id = %(worker_id)s, owner_token = %(owner_token)s, acquired_at = %(acquired_at)s,
                lease_until = %(lease_until)s, last_error = %(last_error)s, version = %(version)s,
                closed_by = %(closed_by)s
 WHERE job_id = %(job_id)s AND version = %(loaded)s;

-- update_job_fenced --
-- A lease holder's write: applied only under its own token and while its lease runs.
UPDATE jobs SET state = %(state)s, attempts = %(attempts)s, cancel_requested = %(cancel_requested)s,
                worker_id = %(worker_id)s, owner_token = %(owner_token)s, acquired_at = %(acquired_at)s,
                lease_until = %(lease_until)s, last_error = %(last_error)s, version = %(version)s,
                closed_by = %(closed_by)s
 WHERE job_id = %(job_id)s AND version = %(loaded)s
   AND owner_token = %(fence)s AND lease_until > now();

-- insert_checkpoint --
INSERT INTO job_checkpoints (job_id, idx, object_key, size, sha256, duration_s, width, height, created_at,
                             quality, failure)
VALUES (%(job_id)s, %(idx)s, %(object_key)s, %(size)s, %(sha256)s, %(duration_s)s, %(width)s,
        %(height)s, %(created_at)s, %(quality)s, %(failure)s);

-- insert_receipt --
INSERT INTO receipts (receipt_id, fingerprint, result, created_at)
VALUES (%(receipt_id)s, %(fingerprint)s, %(result)s, now());

-- get_payment --
SELECT * FROM payments WHERE external_id = %(external_id)s;

-- insert_payment --
INSERT INTO payments (external_id, user_id, coins, paid_amount, currency, received_at)
VALUES (%(external_id)s, %(user_id)s, %(coins)s, %(paid_amount)s, %(currency)s, %(received_at)s);

-- list_payments --
SELECT * FROM payments ORDER BY received_at, external_id;

-- get_refund --
-- Locked: the operator's refund and reconciliation may record the provider's answer at once.
SELECT * FROM refunds WHERE external_id = %(external_id)s FOR UPDATE;

-- list_refunds --
SELECT * FROM refunds ORDER BY requested_at, external_id;

-- upsert_refund --
INSERT INTO refunds (external_id, user_id, coins, requested_by, reason, requested_at, state, finished_at,
                     provider_answer)
VALUES (%(external_id)s, %(user_id)s, %(coins)s, %(requested_by)s, %(reason)s, %(requested_at)s, %(state)s,
        %(finished_at)s, %(provider_answer)s)
    ON CONFLICT (external_id) DO UPDATE
   SET coins = excluded.coins, requested_by = excluded.requested_by, reason = excluded.reason,
       requested_at = excluded.requested_at, state = excluded.state, finished_at = excluded.finished_at,
       provider_answer = excluded.provider_answer;

-- inviter_of --
SELECT inviter FROM referrals WHERE invitee = %(user_id)s;

-- insert_referral --
INSERT INTO referrals (invitee, inviter, at) VALUES (%(invitee)s, %(inviter)s, %(at)s);

-- insert_grant --
INSERT INTO coin_grants (lot_id, user_id, kind, amount, granted_by, reason, granted_at)
VALUES (%(lot_id)s, %(user_id)s, %(kind)s, %(amount)s, %(granted_by)s, %(reason)s, %(granted_at)s);

-- get_grant --
SELECT * FROM coin_grants WHERE lot_id = %(lot_id)s;

-- insert_refused_write --
INSERT INTO refused_writes (job_id, worker_id, operation, reason, at)
VALUES (%(job_id)s, %(worker_id)s, %(operation)s, %(reason)s, %(at)s);

-- count_refused_writes --
SELECT count(*) FROM refused_writes;

-- insert_outbox --
INSERT INTO outbox (user_id, kind, payload, dedup_key, created_at)
VALUES (%(user_id)s, %(kind)s, %(payload)s, %(dedup_key)s, now())
    ON CONFLICT (dedup_key) DO NOTHING;

-- pending_outbox --
SELECT id, user_id, kind, payload, dedup_key FROM outbox WHERE sent_at IS NULL ORDER BY id LIMIT %(limit)s;

-- mark_outbox_sent --
UPDATE outbox SET sent_at = now() WHERE id = %(id)s RETURNING id;

-- take_slot --
-- A free capacity slot for this order; rows other confirmations hold are skipped, so
-- no two users wait on one counter.
UPDATE capacity_slots SET order_id = %(order_id)s
 WHERE slot_id = (SELECT slot_id FROM capacity_slots WHERE order_id IS NULL
                   ORDER BY slot_id LIMIT 1 FOR UPDATE SKIP LOCKED);

-- free_slot --
UPDATE capacity_slots SET order_id = NULL WHERE order_id = %(order_id)s;


-- confirmable_claims --
-- Claims with no payment yet whose charge the provider has listed.
SELECT c.external_id, c.user_id, c.paid_amount, c.currency, c.invoice_payload, c.node, c.claimed_at,
       pc.user_id AS charge_user_id, pc.paid_amount AS charge_amount, pc.currency AS charge_currency,
       pc.invoice_payload AS charge_payload
  FROM payment_claims c JOIN provider_charges pc ON pc.external_id = c.external_id
 WHERE NOT EXISTS (SELECT 1 FROM payments p WHERE p.external_id = c.external_id)
 ORDER BY c.claimed_at;

-- unconfirmed_claims --
SELECT c.* FROM payment_claims c
 WHERE NOT EXISTS (SELECT 1 FROM payments p WHERE p.external_id = c.external_id)
 ORDER BY c.claimed_at;

-- provider_position --
SELECT position FROM provider_cursor WHERE provider = %(provider)s;

-- list_reversals --
SELECT * FROM payment_reversals ORDER BY reversed_at, external_id;

-- rewarded_referrals --
-- The inviter's account row is locked before this is read, so two invitees' first orders
-- count each other and a cap holds exactly.
SELECT count(*) AS total, count(*) FILTER (WHERE settled_at > %(since)s) AS last_day
  FROM referrals WHERE inviter = %(inviter)s AND outcome = 'rewarded';
