-- get_payment --
SELECT * FROM payments WHERE external_id = %(external_id)s;

-- insert_payment --
-- Run at commit inside videocopies_apply (migration 0023), as written here.
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
-- Run at commit inside videocopies_apply (migration 0023), as written here.
INSERT INTO refunds (external_id, user_id, coins, requested_by, reason, requested_at, state, finished_at,
                     provider_answer)
VALUES (%(external_id)s, %(user_id)s, %(coins)s, %(requested_by)s, %(reason)s, %(requested_at)s, %(state)s,
        %(finished_at)s, %(provider_answer)s)
    ON CONFLICT (external_id) DO UPDATE
   SET coins = excluded.coins, requested_by = excluded.requested_by, reason = excluded.reason,
       requested_at = excluded.requested_at, state = excluded.state, finished_at = excluded.finished_at,
       provider_answer = excluded.provider_answer;

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

-- insert_claim --
-- A node's word that a payment arrived; confirmed against the provider's list before it credits.
-- Run at commit inside videocopies_apply (migration 0023), as written here.
INSERT INTO payment_claims (external_id, user_id, paid_amount, currency, invoice_payload, node, claimed_at)
VALUES (%(external_id)s, %(user_id)s, %(paid_amount)s, %(currency)s, %(invoice_payload)s, %(node)s,
        %(claimed_at)s)
    ON CONFLICT (external_id) DO NOTHING;

-- record_charges --
-- The provider's charges read so far, as one write of many rows.
-- Run at commit inside videocopies_apply (migration 0023), as written here.
INSERT INTO provider_charges (external_id, user_id, paid_amount, currency, invoice_payload, read_at)
SELECT nc.external_id, nc.user_id, nc.paid_amount, nc.currency, nc.invoice_payload, nc.read_at
  FROM jsonb_populate_recordset(NULL::provider_charges, %(charges)s::jsonb) AS nc
    ON CONFLICT (external_id) DO NOTHING;

-- move_provider_cursor --
-- Where the next read of the provider's list starts; it never moves back.
-- Run at commit inside videocopies_apply (migration 0023), as written here.
INSERT INTO provider_cursor (provider, position, read_at)
VALUES (%(provider)s, %(position)s, %(read_at)s)
    ON CONFLICT (provider) DO UPDATE
   SET position = GREATEST(provider_cursor.position, excluded.position), read_at = excluded.read_at;

-- insert_reversal --
-- Run at commit inside videocopies_apply (migration 0023), as written here.
INSERT INTO payment_reversals (external_id, user_id, taken, owed, reason, reversed_at)
VALUES (%(external_id)s, %(user_id)s, %(taken)s, %(owed)s, %(reason)s, %(reversed_at)s);
