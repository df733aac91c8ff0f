-- prune_timeouts --
-- A batch gives up rather than wait for a lock (a foreign key's check). What a due row must not
-- have is looked up row by row in the walks (scalar subqueries, by primary or unique key): as
-- NOT EXISTS the planner hashed all of jobs for every batch.
SELECT set_config('lock_timeout', %s, true), set_config('statement_timeout', %s, true);

-- prune_batch --
-- One batch along a table's walk: {walk} is the table's walk_<table> (the batch as `walked`, in
-- the walk's key order, `late` where the walk may stop; the `due` rows among them; the `last` key
-- reached), {take} its take_<table> (the due rows nobody is writing, locked and deleted as
-- `gone`; what may have changed since the walk read a row is checked again), or count_due for a
-- dry run.
WITH {walk},
{take}
SELECT (SELECT count(*) FROM gone) AS pruned, (SELECT count(*) FROM walked) AS walked,
       coalesce((SELECT bool_and(late) FROM walked), false) AS late, last.*
  FROM (SELECT 1) AS one LEFT JOIN last ON true;

-- count_due --
-- A dry run deletes nothing: the due rows are counted as if they were gone.
gone AS (SELECT 1 FROM due);

-- walk_inbox --
-- Processed events; ids grow with arrival, so a batch that all arrived after the cutoff ends the
-- walk.
walked AS (
    SELECT i.id, i.processed_at <= %(cutoff)s AS due, i.received_at > %(cutoff)s AS late
      FROM inbox i WHERE i.id > %(k0)s ORDER BY i.id LIMIT %(limit)s
), due AS (SELECT w.id AS row FROM walked w WHERE w.due
), last AS (SELECT id FROM walked ORDER BY id DESC LIMIT 1);

-- take_inbox --
-- The due events nobody is writing, still processed by the cutoff, deleted.
locked AS (SELECT t.id FROM inbox t WHERE t.id = ANY(ARRAY(SELECT row FROM due)) AND t.processed_at <= %(cutoff)s
             FOR UPDATE OF t SKIP LOCKED
), gone AS (DELETE FROM inbox t WHERE t.id = ANY(ARRAY(SELECT id FROM locked)) RETURNING 1);

-- walk_outbox --
-- Sent or given up messages (both set sent_at).
walked AS (
    SELECT o.id, o.sent_at <= %(cutoff)s AS due, o.created_at > %(cutoff)s AS late
      FROM outbox o WHERE o.id > %(k0)s ORDER BY o.id LIMIT %(limit)s
), due AS (SELECT w.id AS row FROM walked w WHERE w.due
), last AS (SELECT id FROM walked ORDER BY id DESC LIMIT 1);

-- take_outbox --
-- The due messages nobody is writing, still sent by the cutoff, deleted.
locked AS (SELECT t.id FROM outbox t WHERE t.id = ANY(ARRAY(SELECT row FROM due)) AND t.sent_at <= %(cutoff)s
             FOR UPDATE OF t SKIP LOCKED
), gone AS (DELETE FROM outbox t WHERE t.id = ANY(ARRAY(SELECT id FROM locked)) RETURNING 1);

-- walk_receipts --
-- A receipt answers retries of its report; it goes once the job its result names is closed (or
-- gone). Completions grouped in one transaction share created_at: the walk orders ties.
walked AS (
    SELECT r.created_at, r.receipt_id, r.result->>'job_id' AS job_id, false AS late
      FROM receipts r
     WHERE r.created_at <= %(cutoff)s AND r.created_at >= %(k0)s AND (r.created_at, r.receipt_id) > (%(k0)s, %(k1)s)
     ORDER BY r.created_at, r.receipt_id LIMIT %(limit)s
), due AS (
    SELECT w.receipt_id AS row FROM walked w
     WHERE coalesce((SELECT j.state FROM jobs j WHERE j.job_id = w.job_id), 'gone') NOT IN ('queued', 'leased')
), last AS (SELECT created_at, receipt_id FROM walked ORDER BY created_at DESC, receipt_id DESC LIMIT 1);

-- take_receipts --
-- The due receipts nobody is writing, deleted (a receipt never changes).
locked AS (SELECT t.receipt_id FROM receipts t WHERE t.receipt_id = ANY(ARRAY(SELECT row FROM due))
             FOR UPDATE OF t SKIP LOCKED
), gone AS (DELETE FROM receipts t WHERE t.receipt_id = ANY(ARRAY(SELECT receipt_id FROM locked)) RETURNING 1);

-- walk_quotes --
-- Orders that stayed quotes: nothing was reserved, queued or given a slot for them.
walked AS (
    SELECT o.quote_expires_at, o.order_id, false AS late
      FROM orders o
     WHERE o.confirmed_at IS NULL AND o.state = 'quoted'
       AND o.quote_expires_at <= %(cutoff)s AND o.quote_expires_at >= %(k0)s
       AND (o.quote_expires_at, o.order_id) > (%(k0)s, %(k1)s)
     ORDER BY o.quote_expires_at, o.order_id LIMIT %(limit)s
), due AS (
    SELECT w.order_id AS row FROM walked w
     WHERE (SELECT 1 FROM jobs j WHERE j.order_id = w.order_id) IS NULL
       AND (SELECT 1 FROM capacity_slots s WHERE s.order_id = w.order_id) IS NULL
       AND (SELECT 1 FROM coin_reservations r WHERE r.order_id = w.order_id) IS NULL
), last AS (SELECT quote_expires_at, order_id FROM walked ORDER BY quote_expires_at DESC, order_id DESC LIMIT 1);

-- take_quotes --
-- The due orders nobody is writing, still quotes, deleted.
locked AS (SELECT t.order_id FROM orders t WHERE t.order_id = ANY(ARRAY(SELECT row FROM due)) AND t.state = 'quoted'
             FOR UPDATE OF t SKIP LOCKED
), gone AS (DELETE FROM orders t WHERE t.order_id = ANY(ARRAY(SELECT order_id FROM locked)) RETURNING 1);

-- walk_job_checkpoints --
-- A closed job's checkpoints, once the copy each names is gone from the store.
walked AS (
    SELECT c.ctid AS at, c.created_at, c.job_id, c.idx, c.object_key, false AS late
      FROM job_checkpoints c
     WHERE c.created_at <= %(cutoff)s AND c.created_at >= %(k0)s
       AND (c.created_at, c.job_id, c.idx) > (%(k0)s, %(k1)s, %(k2)s)
     ORDER BY c.created_at, c.job_id, c.idx LIMIT %(limit)s
), due AS (
    SELECT w.at AS row FROM walked w
     WHERE (SELECT j.state FROM jobs j WHERE j.job_id = w.job_id) IN ('done', 'failed', 'cancelled')
       AND coalesce((SELECT s.state FROM stored_objects s WHERE s.key = w.object_key), 'deleted') = 'deleted'
), last AS (SELECT created_at, job_id, idx FROM walked ORDER BY created_at DESC, job_id DESC, idx DESC LIMIT 1);

-- take_job_checkpoints --
-- The due checkpoints nobody is writing, deleted (a checkpoint never changes).
locked AS (SELECT t.ctid FROM job_checkpoints t WHERE t.ctid = ANY(ARRAY(SELECT row FROM due))
             FOR UPDATE OF t SKIP LOCKED
), gone AS (DELETE FROM job_checkpoints t WHERE t.ctid = ANY(ARRAY(SELECT ctid FROM locked)) RETURNING 1);
