-- load_account --
-- A user's account with its working lots and its open reservations, locking only this user's row.
-- The working lots: each with coins available, each an open reservation holds from, and those
-- named in `lots` (a payment's lot to refund, a grant's id to check), whatever their state; a
-- spent lot stays here (migration 0027).
-- If the row lock had to wait, the lots were read from before the other writer committed:
-- `seen_version` (read from that same old snapshot) then differs, and the load runs again:
-- a new statement, a new snapshot, the lock already ours.
SELECT a.version,
       (SELECT s.version FROM coin_accounts s WHERE s.user_id = a.user_id) AS seen_version,
       w.lots, w.all_lots,
       (SELECT coalesce(json_agg(json_build_object(
                   'order_id', r.order_id, 'amount', r.amount, 'debited', r.debited,
                   'released', r.released,
                   'holds', r.holds,
                   'keys', (SELECT coalesce(json_agg(d.key), '[]')
                              FROM coin_debits d WHERE d.order_id = r.order_id))), '[]')
          FROM coin_reservations r WHERE r.user_id = a.user_id AND r.open) AS reservations
  FROM coin_accounts a,
       -- One pass over the account's lots: the working ones as objects, every one in the totals.
       -- The held lots' ids are read only when a lot with nothing available is met.
       LATERAL (SELECT coalesce(json_agg(json_build_object(
                           'lot_id', l.lot_id, 'kind', l.kind, 'amount', l.amount,
                           'granted_at', l.granted_at, 'expires_at', l.expires_at,
                           'available', l.available, 'debited', l.debited, 'expired', l.expired,
                           'refunded', l.refunded)
                         ORDER BY l.granted_at, l.lot_id)
                         FILTER (WHERE l.available > 0 OR l.lot_id = ANY(%(lots)s::text[])
                                    OR l.lot_id = ANY(ARRAY(
                                           SELECT h.hold->>0
                                             FROM coin_reservations r, jsonb_array_elements(r.holds) h(hold)
                                            WHERE r.user_id = a.user_id AND r.open))), '[]') AS lots,
                       json_build_array(coalesce(sum(l.amount), 0), coalesce(sum(l.debited), 0),
                                        coalesce(sum(l.expired + l.available), 0),
                                        coalesce(sum(l.refunded), 0)) AS all_lots
                  FROM coin_lots l WHERE l.user_id = a.user_id) w
 WHERE a.user_id = %(user_id)s
   FOR UPDATE OF a;

-- account_lots --
-- Lots of an account already loaded (its row locked by this transaction), asked for by id.
SELECT lot_id, kind, amount, granted_at, expires_at, available, debited, expired, refunded
  FROM coin_lots WHERE user_id = %(user_id)s AND lot_id = ANY(%(lots)s::text[])
 ORDER BY granted_at, lot_id;

-- insert_account --
-- Run at commit inside videocopies_apply (migration 0023), as written here.
INSERT INTO coin_accounts (user_id, version, created_at) VALUES (%(user_id)s, %(version)s, %(now)s);

-- update_account_version --
-- Optimistic check: the row is locked, so a mismatch means the aggregate was written meanwhile.
-- Run at commit inside videocopies_apply (migration 0023), as written here.
UPDATE coin_accounts SET version = %(version)s WHERE user_id = %(user_id)s AND version = %(loaded)s;

-- insert_lot --
-- Run at commit inside videocopies_apply (migration 0023), as written here.
INSERT INTO coin_lots (lot_id, user_id, kind, amount, granted_at, expires_at, available, debited, expired,
                       refunded)
VALUES (%(lot_id)s, %(user_id)s, %(kind)s, %(amount)s, %(granted_at)s, %(expires_at)s,
        %(available)s, %(debited)s, %(expired)s, %(refunded)s);

-- update_lot --
-- Run at commit inside videocopies_apply (migration 0023), as written here.
UPDATE coin_lots SET available = %(available)s, debited = %(debited)s, expired = %(expired)s,
                     refunded = %(refunded)s
 WHERE lot_id = %(lot_id)s;

-- insert_reservation --
-- Run at commit inside videocopies_apply (migration 0033), as written here: the holds, a list of
-- [lot_id, held] in the order they were taken, in the reservation's row.
INSERT INTO coin_reservations (order_id, user_id, amount, debited, released, open, holds)
VALUES (%(order_id)s, %(user_id)s, %(amount)s, %(debited)s, %(released)s, %(open)s, %(holds)s);

-- update_reservation --
-- Run at commit inside videocopies_apply (migration 0033), as written here.
UPDATE coin_reservations SET debited = %(debited)s, released = %(released)s, open = %(open)s, holds = %(holds)s
 WHERE order_id = %(order_id)s;

-- upsert_hold --
-- Run inside videocopies_apply (migration 0033), as written here, for code of level 13 only: it
-- writes each hold on its own, in the order of its seq, where code of level 14 sends the whole list
-- with its reservation. The hold replaces its place in the list, or is added at its end.
UPDATE coin_reservations
   SET holds = CASE WHEN %(seq)s < jsonb_array_length(holds)
                    THEN jsonb_set(holds, ARRAY[%(seq)s::text], jsonb_build_array(%(lot_id)s::text, %(held)s::integer))
                    ELSE holds || jsonb_build_array(jsonb_build_array(%(lot_id)s::text, %(held)s::integer))
               END
 WHERE order_id = %(order_id)s;

-- insert_debit --
-- Run at commit inside videocopies_apply (migration 0023), as written here.
INSERT INTO coin_debits (order_id, key) VALUES (%(order_id)s, %(key)s);

-- accounts_with_expiring_lots --
-- Accounts holding available coins in lots past their expiry, for the expiry sweep.
SELECT DISTINCT user_id FROM coin_lots
 WHERE expires_at <= %(now)s AND available > 0 AND expires_at IS NOT NULL
 LIMIT %(limit)s;

-- insert_grant --
-- Run at commit inside videocopies_apply (migration 0023), as written here.
INSERT INTO coin_grants (lot_id, user_id, kind, amount, granted_by, reason, granted_at)
VALUES (%(lot_id)s, %(user_id)s, %(kind)s, %(amount)s, %(granted_by)s, %(reason)s, %(granted_at)s);

-- get_grant --
SELECT * FROM coin_grants WHERE lot_id = %(lot_id)s;

-- insert_accounts --
-- A run of new accounts as one write (the unit of work coalesces consecutive insert_account
-- writes, migration 0016): one statement instead of one per row.
-- Run at commit inside videocopies_apply (migration 0023), as written here.
INSERT INTO coin_accounts (user_id, version, created_at)
SELECT na.user_id, na.version, na.now
  FROM jsonb_to_recordset(%(accounts)s::jsonb) AS na(user_id bigint, version integer, now timestamptz);

-- insert_lots --
-- A run of new lots as one write, as insert_accounts.
-- Run at commit inside videocopies_apply (migration 0023), as written here.
INSERT INTO coin_lots (lot_id, user_id, kind, amount, granted_at, expires_at, available, debited,
                       expired, refunded)
SELECT nl.lot_id, nl.user_id, nl.kind, nl.amount, nl.granted_at, nl.expires_at, nl.available,
       nl.debited, nl.expired, nl.refunded
  FROM jsonb_populate_recordset(NULL::coin_lots, %(lots)s::jsonb) AS nl;

-- end_lot --
-- A reversed payment's lot ends (migration 0018).
-- Run at commit inside videocopies_apply (migration 0023), as written here.
UPDATE coin_lots SET expires_at = %(expires_at)s WHERE lot_id = %(lot_id)s;
