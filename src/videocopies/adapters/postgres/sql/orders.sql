-- load_order --
SELECT * FROM orders WHERE order_id = %(order_id)s FOR UPDATE;

-- insert_order --
-- Run at commit inside videocopies_apply (migration 0023), as written here.
INSERT INTO orders (order_id, user_id, source_key, copies, price_per_copy, total, tariff_version,
                    quote_expires_at, quote_token, seed, state, copy_states, failure_reason,
                    created_at, version, source_bytes)
VALUES (%(order_id)s, %(user_id)s, %(source_key)s, %(copies)s, %(price_per_copy)s, %(total)s,
        %(tariff_version)s, %(quote_expires_at)s, %(quote_token)s, %(seed)s, %(state)s,
        %(copy_states)s, %(failure_reason)s, %(created_at)s, %(version)s, %(source_bytes)s);

-- update_order --
-- Run at commit inside videocopies_apply (migration 0023), as written here.
UPDATE orders SET state = %(state)s, copy_states = %(copy_states)s, failure_reason = %(failure_reason)s,
                  version = %(version)s
 WHERE order_id = %(order_id)s AND version = %(loaded)s;

-- take_slot --
-- A free capacity slot for this order; rows other confirmations hold are skipped, so
-- no two users wait on one counter. None free: the commit is refused with SQLSTATE VCC01.
-- Run at commit inside videocopies_apply (migration 0023), as written here.
UPDATE capacity_slots SET order_id = %(order_id)s
 WHERE slot_id = (SELECT slot_id FROM capacity_slots WHERE order_id IS NULL
                   ORDER BY slot_id LIMIT 1 FOR UPDATE SKIP LOCKED);

-- free_slot --
-- Run at commit inside videocopies_apply (migration 0023), as written here.
UPDATE capacity_slots SET order_id = NULL WHERE order_id = %(order_id)s;
