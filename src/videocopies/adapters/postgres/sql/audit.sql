-- audit_lots_add_up --
-- The rows that break the rule: every coin of a lot is in exactly one place: available, held,
-- debited or expired.
SELECT l.lot_id, l.amount, l.available, coalesce(h.held, 0) AS held, l.debited, l.expired
FROM coin_lots l
LEFT JOIN (SELECT h.hold->>0 AS lot_id, sum((h.hold->>1)::integer) AS held
             FROM coin_reservations r, jsonb_array_elements(r.holds) h(hold) GROUP BY 1) h USING (lot_id)
WHERE l.amount <> l.available + coalesce(h.held, 0) + l.debited + l.expired
   OR least(l.available, l.debited, l.expired) < 0;

-- audit_reservations_add_up --
-- The rows that break the rule: a reservation holds its amount less what was debited and released,
-- and a closed one holds nothing.
SELECT r.order_id, r.amount, r.debited, r.released, r.open, coalesce(h.held, 0) AS held
FROM coin_reservations r
LEFT JOIN LATERAL (SELECT sum((h.hold->>1)::integer) AS held, min((h.hold->>1)::integer) AS least
                     FROM jsonb_array_elements(r.holds) h(hold)) h ON true
WHERE r.amount - r.debited - r.released <> coalesce(h.held, 0)
   OR least(r.debited, r.released, coalesce(h.least, 0)) < 0
   OR (NOT r.open AND coalesce(h.held, 0) <> 0);

-- audit_holds_on_own_lots --
-- The rows that break the rule: a reservation holds coins only from its own user's lots, and
-- from lots that exist (the holds are a list in the reservation's row since migration 0033, which
-- no foreign key can reach).
SELECT r.order_id, h.hold->>0 AS lot_id, r.user_id AS reserved_for, l.user_id AS lot_of
FROM coin_reservations r
CROSS JOIN LATERAL jsonb_array_elements(r.holds) h(hold)
LEFT JOIN coin_lots l ON l.lot_id = h.hold->>0
WHERE l.user_id IS DISTINCT FROM r.user_id;

-- audit_accounts_balance --
-- The rows that break the rule: for every account, granted = available + reserved + debited +
-- expired.
SELECT l.user_id, l.granted, l.available, coalesce(r.reserved, 0) AS reserved, l.debited, l.expired
FROM (SELECT user_id, sum(amount) AS granted, sum(available) AS available, sum(debited) AS debited,
             sum(expired) AS expired
      FROM coin_lots GROUP BY user_id) l
LEFT JOIN (SELECT user_id, sum(amount - debited - released) AS reserved
           FROM coin_reservations GROUP BY user_id) r USING (user_id)
WHERE l.granted <> l.available + coalesce(r.reserved, 0) + l.debited + l.expired;

-- audit_orders_reserved --
-- The rows that break the rule: every confirmed order reserved its total from its own user, and
-- only confirmed orders reserve.
SELECT o.order_id, r.order_id AS reservation, o.state, o.total, r.amount, o.user_id, r.user_id AS reserved_for
FROM orders o FULL JOIN coin_reservations r USING (order_id)
WHERE (o.state IS DISTINCT FROM 'quoted' OR r.order_id IS NOT NULL)
  AND (o.order_id IS NULL OR r.order_id IS NULL OR o.state = 'quoted'
       OR r.amount <> o.total OR r.user_id <> o.user_id);

-- audit_debits_per_copy --
-- The rows that break the rule: a reservation is debited the order's price once per delivered copy.
SELECT r.order_id, r.debited, coalesce(d.copies, 0) AS debited_copies, o.price_per_copy
FROM coin_reservations r JOIN orders o USING (order_id)
LEFT JOIN (SELECT order_id, count(*) AS copies FROM coin_debits GROUP BY order_id) d USING (order_id)
WHERE r.debited <> coalesce(d.copies, 0) * o.price_per_copy;

-- audit_orders_have_jobs --
-- The rows that break the rule: every confirmed order has its job.
SELECT o.order_id, o.state FROM orders o LEFT JOIN jobs j USING (order_id)
WHERE o.state <> 'quoted' AND j.job_id IS NULL;

-- audit_payments_credited --
-- The rows that break the rule: every payment is credited once, as a purchase lot of its coins for
-- its user.
SELECT p.external_id, p.user_id, p.coins, l.lot_id, l.user_id AS lot_of, l.amount, l.kind
FROM payments p LEFT JOIN coin_lots l ON l.lot_id = 'pay:' || p.external_id
WHERE l.lot_id IS NULL OR l.user_id <> p.user_id OR l.amount <> p.coins OR l.kind <> 'purchase';

-- audit_counts --
-- Accounts, lots, reservations, confirmed orders and coins granted.
SELECT
 (SELECT count(*) FROM coin_accounts),
 (SELECT count(*) FROM coin_lots),
 (SELECT count(*) FROM coin_reservations),
 (SELECT count(*) FROM orders WHERE state <> 'quoted'),
 (SELECT coalesce(sum(amount), 0)
 FROM coin_lots);
