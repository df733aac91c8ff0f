-- control_statement_timeout --
-- Every read of the control panel is limited in time.
SET LOCAL statement_timeout = '5s';

-- control_leases --
-- Leases held now, soonest to run out first.
SELECT j.job_id, j.order_id, o.user_id, j.worker_id, left(j.owner_token, 6) AS owner_token_prefix, j.created_at,
       j.acquired_at, j.lease_until, j.attempts, j.max_attempts, o.copies,
       (SELECT count(*) FROM job_checkpoints c WHERE c.job_id = j.job_id) AS copies_done, j.cancel_requested
  FROM jobs j JOIN orders o ON o.order_id = j.order_id
 WHERE j.state = 'leased'
 ORDER BY j.lease_until
 LIMIT %(limit)s;

-- control_orders_in_progress --
-- Orders with a job queued or leased. Two arms, so each walks its own partial index.
SELECT o.order_id, o.user_id, o.copies, o.total, o.state, o.created_at, o.failure_reason,
       (SELECT count(*) FROM jsonb_array_elements(o.copy_states) s WHERE s->>0 = 'delivered') AS copies_delivered
  FROM (SELECT order_id, created_at FROM jobs WHERE state = 'queued'
        UNION ALL
        SELECT order_id, created_at FROM jobs WHERE state = 'leased') j
  JOIN orders o ON o.order_id = j.order_id
 ORDER BY j.created_at
 LIMIT %(limit)s;

-- control_recent_orders --
SELECT o.order_id, o.user_id, o.copies, o.total, o.state, o.created_at, o.failure_reason,
       (SELECT count(*) FROM jsonb_array_elements(o.copy_states) s WHERE s->>0 = 'delivered') AS copies_delivered
  FROM orders o ORDER BY o.created_at DESC LIMIT %(limit)s;

-- control_user_orders --
SELECT o.order_id, o.user_id, o.copies, o.total, o.state, o.created_at, o.failure_reason,
       (SELECT count(*) FROM jsonb_array_elements(o.copy_states) s WHERE s->>0 = 'delivered') AS copies_delivered
  FROM orders o WHERE o.user_id = %(user_id)s ORDER BY o.created_at DESC LIMIT %(limit)s;

-- control_account_exists --
SELECT 1 FROM coin_accounts WHERE user_id = %(user_id)s;

-- control_lots --
SELECT lot_id, kind, amount, granted_at, expires_at, available, debited, expired
  FROM coin_lots WHERE user_id = %(user_id)s ORDER BY granted_at, lot_id;

-- control_reservations --
SELECT r.order_id, r.amount, r.debited, r.released, r.open, r.holds
  FROM coin_reservations r WHERE r.user_id = %(user_id)s
 ORDER BY r.open DESC, r.order_id
 LIMIT 200;

-- control_payments --
SELECT external_id, user_id, coins, paid_amount, currency, received_at
 FROM payments ORDER BY received_at DESC
 LIMIT %(limit)s;

-- control_user_payments --
SELECT external_id, user_id, coins, paid_amount, currency, received_at
 FROM payments WHERE user_id = %(user_id)s
 ORDER BY received_at DESC LIMIT %(limit)s;

-- control_unconfirmed_payments --
SELECT c.external_id, c.user_id, c.paid_amount, c.currency, c.node, c.claimed_at FROM payment_claims c
 WHERE NOT EXISTS (SELECT 1 FROM payments p WHERE p.external_id = c.external_id)
 ORDER BY c.claimed_at DESC LIMIT %(limit)s;

-- control_reversed_payments --
SELECT external_id, user_id, taken, owed, reversed_at FROM payment_reversals ORDER BY reversed_at DESC
 LIMIT %(limit)s;

-- control_copies_per_minute --
SELECT date_trunc('minute', created_at) AS minute, count(*) AS count
  FROM job_checkpoints WHERE created_at >= %(since)s
 GROUP BY 1 ORDER BY 1;

-- control_latency_per_minute --
-- A finished job no longer holds its claim time (acquired_at goes with the lease), so the wait is
-- measured to the job's first stored copy: queue time plus one copy's rendering.
WITH firsts AS (
    SELECT c.job_id, min(c.created_at) AS first_at
      FROM job_checkpoints c WHERE c.created_at >= %(since)s
     GROUP BY c.job_id
)
SELECT date_trunc('minute', f.first_at) AS minute,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM f.first_at - j.created_at)) AS p50_s,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM f.first_at - j.created_at)) AS p95_s,
       count(*) AS jobs
  FROM firsts f JOIN jobs j ON j.job_id = f.job_id
 WHERE NOT EXISTS (SELECT 1 FROM job_checkpoints e WHERE e.job_id = f.job_id AND e.created_at < %(since)s)
 GROUP BY 1 ORDER BY 1;

-- control_unreadable --
-- Backwards along the partial index of unreadable events (migration 0017).
SELECT received_at AS at, update_id, nullif(user_id, 0) AS user_id, coalesce(payload->>'reason', '') AS reason
  FROM inbox WHERE kind = 'unreadable'
 ORDER BY id DESC
 LIMIT %(limit)s;

-- control_nodes --
SELECT name, role, created_at, revoked_at, last_seen_at
 FROM nodes ORDER BY revoked_at IS NOT NULL, role, name;

-- control_duties --
SELECT duty, holder, acquired_at, lease_until, term FROM duty_leases ORDER BY duty;
