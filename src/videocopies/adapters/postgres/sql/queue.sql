-- queue_figures --
-- What the operators' figures need, in one short read. Only unfinished jobs are counted, through
-- their partial indexes, so a scrape costs the same whatever the history holds; lapsing_buttons
-- holds only the quotes sent within a quote's lifetime.
SELECT (SELECT count(*) FROM jobs WHERE state = 'queued') AS queued,
       (SELECT count(*) FROM jobs WHERE state = 'leased' AND lease_until > now()) AS leased,
       (SELECT count(*) FROM jobs WHERE state = 'leased' AND lease_until <= now()) AS lapsed,
       (SELECT count(*) FROM inbox WHERE processed_at IS NULL) AS inbox_pending,
       (SELECT coalesce(extract(epoch FROM now() - min(received_at)), 0)
          FROM inbox WHERE processed_at IS NULL) AS inbox_lag_s,
       (SELECT count(*) FROM outbox WHERE sent_at IS NULL) AS outbox_pending,
       (SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0)
          FROM outbox WHERE sent_at IS NULL) AS outbox_lag_s,
       (SELECT count(*) FROM lapsing_buttons) AS buttons_lapsing,
       (SELECT count(*) FROM refused_writes) AS refused_writes,
       (SELECT count(*) FROM payments) AS payments,
       (SELECT coalesce(sum(coins), 0) FROM payments) AS payment_coins;

-- glance_claimable --
-- A glance, outside any transaction: is there a job to claim?
SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'queued')
    OR EXISTS (SELECT 1 FROM jobs WHERE state = 'leased' AND lease_until <= now());

-- glance_lapsed --
-- A glance: has a lease run out?
SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'leased' AND lease_until <= now());

-- glance_inbox --
-- A glance: has some user inbox events nobody is handling?
SELECT EXISTS (SELECT 1 FROM inbox_users WHERE claimed_until IS NULL OR claimed_until <= now());

-- glance_outbox --
-- A glance: is a message waiting to be claimed?
SELECT EXISTS (SELECT 1
 FROM outbox WHERE sent_at IS NULL AND (claimed_until IS NULL OR claimed_until <= now()));
