-- insert_outbox --
-- Run at commit inside videocopies_apply (migration 0023), as written here.
INSERT INTO outbox (user_id, kind, payload, dedup_key, created_at)
VALUES (%(user_id)s, %(kind)s, %(payload)s, %(dedup_key)s, now())
    ON CONFLICT (dedup_key) DO NOTHING;

-- pending_outbox --
SELECT id, user_id, kind, payload, dedup_key FROM outbox WHERE sent_at IS NULL ORDER BY id LIMIT %(limit)s;

-- mark_outbox_sent --
UPDATE outbox SET sent_at = now() WHERE id = %(id)s RETURNING id;

-- claim_outbox --
-- Up to a limit of messages to send, held for a while. Replies walk the index of unsent replies in
-- id order and stop at the limit; a reply behind an unsent copy of its user waits for it (it is
-- taken among the copies, in its turn). Copies are looked for only when replies leave room
-- (LIMIT 0 runs nothing): the users with unsent copies are found by skipping through their index,
-- one step per user, and each one's first `per_user` unsent messages give the turns. Measured on
-- 10,000 unsent rows (EXPLAIN ANALYZE, prepared): 100 welcomes ahead of 1,000 copies of 100 users,
-- 1-3 ms; 200 of 10,000 copies of 1,000 users, 17 ms (one step per user, about 15 us each). The
-- claimed rows are updated by primary key (`= ANY`): joined to the CTE, the planner hashed the
-- whole table for each batch. Reports name their rows the same way, which helps once the table
-- has statistics (see mark_inbox_done).
WITH RECURSIVE replies AS (
    SELECT o.id FROM outbox o
     WHERE o.sent_at IS NULL AND o.kind <> 'copy_ready'
       AND (o.claimed_until IS NULL OR o.claimed_until <= %(now)s)
       AND (SELECT count(*) < %(per_user)s
                   AND NOT coalesce(bool_or(e.kind = 'copy_ready' OR e.claimed_until > %(now)s), false)
              FROM outbox e WHERE e.user_id = o.user_id AND e.sent_at IS NULL AND e.id < o.id)
     ORDER BY o.id LIMIT %(limit)s
       FOR UPDATE OF o SKIP LOCKED
), waiting AS (
    (SELECT c.user_id FROM outbox c WHERE c.sent_at IS NULL AND c.kind = 'copy_ready' ORDER BY c.user_id LIMIT 1)
    UNION ALL
    SELECT (SELECT c.user_id FROM outbox c
             WHERE c.sent_at IS NULL AND c.kind = 'copy_ready' AND c.user_id > w.user_id
             ORDER BY c.user_id LIMIT 1)
      FROM waiting w WHERE w.user_id IS NOT NULL
), turns AS (
    SELECT t.id FROM waiting w CROSS JOIN LATERAL (
        SELECT f.id, f.turn FROM (
            SELECT o.id, o.claimed_until, row_number() OVER mine AS turn,
                   bool_or(o.kind = 'copy_ready') OVER mine AS behind_copy,
                   bool_or(o.claimed_until > %(now)s) OVER (mine ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
                       AS behind_held
              FROM (SELECT e.id, e.kind, e.claimed_until FROM outbox e
                     WHERE e.user_id = w.user_id AND e.sent_at IS NULL ORDER BY e.id LIMIT %(per_user)s) o
            WINDOW mine AS (ORDER BY o.id)
        ) f
         WHERE f.behind_copy AND NOT coalesce(f.behind_held, false)
           AND (f.claimed_until IS NULL OR f.claimed_until <= %(now)s)
    ) t
     WHERE w.user_id IS NOT NULL
     ORDER BY t.turn, t.id
     LIMIT %(limit)s - (SELECT count(*) FROM replies)
), copies AS (
    SELECT o.id FROM outbox o
     WHERE o.id = ANY(ARRAY(SELECT id FROM turns)) AND o.sent_at IS NULL
       AND (o.claimed_until IS NULL OR o.claimed_until <= %(now)s)
       FOR UPDATE SKIP LOCKED
)
UPDATE outbox SET claimed_until = %(until)s, attempts = attempts + 1
 WHERE outbox.id = ANY(ARRAY(SELECT id FROM replies UNION ALL SELECT id FROM copies))
RETURNING outbox.id, outbox.user_id, outbox.kind, outbox.payload, outbox.attempts,
          EXISTS (SELECT 1 FROM bot_users b WHERE b.user_id = outbox.user_id AND b.blocked_at IS NOT NULL)
              AS blocked;

-- queue_outbox --
-- Messages in this order; a dedup key seen before is skipped.
INSERT INTO outbox (user_id, kind, payload, dedup_key, created_at)
SELECT (r.e->>'user_id')::bigint, r.e->>'kind', r.e->'payload', r.e->>'dedup_key', now()
  FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS r(e, n)
 ORDER BY r.n
ON CONFLICT (dedup_key) DO NOTHING;

-- outbox_message --
SELECT id, user_id, kind, payload, attempts FROM outbox WHERE id = %s;

-- outbox_messages --
SELECT id, user_id, kind, payload, attempts FROM outbox WHERE id = ANY(%s) ORDER BY id;

-- outbox_messages_of_kind --
SELECT id, user_id, kind, payload, attempts FROM outbox WHERE id = ANY(%s) AND kind = %s ORDER BY id;

-- unsent_of_user --
SELECT id, user_id, kind, payload, attempts FROM outbox WHERE user_id = %s AND sent_at IS NULL ORDER BY id;

-- outbox_sent_many --
-- Many sent (or given up, with an error); by primary key, see claim_outbox. A quote sent keeps its
-- Telegram message in lapsing_buttons until its price expires (lapse_buttons; the rule is
-- edge_outbox.py's _buttons_until); a reply to a press that took a message's buttons off
-- (`unbutton`) forgets that message there. Returns how many were not sent already, and when the
-- first of the messages it began to keep lapses (core's sweep is told, so it wakes then).
WITH sent AS (
    UPDATE outbox SET sent_at = now(), delivery = d.delivery, claimed_until = NULL
      FROM jsonb_to_recordset(%s::jsonb) AS d(id bigint, delivery jsonb)
     WHERE outbox.id = d.id AND outbox.id = ANY(%s::bigint[]) AND outbox.sent_at IS NULL
    RETURNING outbox.user_id, outbox.kind, outbox.payload, outbox.delivery
), lapsing AS (
    INSERT INTO lapsing_buttons (user_id, message_id, lapses_at)
    SELECT s.user_id, (s.delivery->>'message_id')::bigint, (s.payload->>'expires_at')::timestamptz
      FROM sent s
     WHERE s.kind = 'screen' AND s.payload->>'screen' = 'quote' AND s.payload ? 'expires_at'
       AND s.delivery ? 'message_id' AND NOT s.delivery ? 'error'
        ON CONFLICT DO NOTHING
    RETURNING lapses_at
), pressed AS (
    DELETE FROM lapsing_buttons b USING sent s
     WHERE s.payload ? 'unbutton' AND b.user_id = s.user_id AND b.message_id = (s.payload->>'unbutton')::bigint
)
SELECT count(*) AS recorded, (SELECT min(lapses_at) FROM lapsing) AS lapses FROM sent;

-- lapse_buttons --
-- The sent messages whose buttons lapsed by now, each forgotten in the transaction that queues an
-- `unbutton` message for it (edge takes the buttons off); oldest first, rows another core is
-- taking skipped. Returns how many were taken.
WITH due AS (
    DELETE FROM lapsing_buttons b
     WHERE (b.user_id, b.message_id) IN (
           SELECT l.user_id, l.message_id FROM lapsing_buttons l WHERE l.lapses_at <= %(now)s
            ORDER BY l.lapses_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED)
    RETURNING b.user_id, b.message_id
), queued AS (
    INSERT INTO outbox (user_id, kind, payload, dedup_key, created_at)
    SELECT d.user_id, 'unbutton', jsonb_build_object('unbutton', d.message_id),
           'lapsed:' || d.user_id || ':' || d.message_id, now()
      FROM due d ORDER BY d.user_id, d.message_id
        ON CONFLICT (dedup_key) DO NOTHING
    RETURNING 1
)
SELECT count(*) AS lapsed FROM due;

-- next_lapse --
-- When the next sent message's buttons lapse (the sweep sleeps until then); one index read.
SELECT min(lapses_at) AS due FROM lapsing_buttons;

-- outbox_sent --
UPDATE outbox SET sent_at = now(), delivery = %s, claimed_until = NULL WHERE id = %s AND sent_at IS NULL;

-- outbox_retry_later --
UPDATE outbox SET claimed_until = %s WHERE id = %s AND sent_at IS NULL;

-- progress_messages --
-- The Telegram message showing each order's progress: the order's accepted screen, its row found by
-- its dedup key (progress:<order>, the unique index), with the message id its delivery report gave
-- or the id of the message that replaced it (outbox_progress_moved).
SELECT dedup_key, (delivery->>'message_id')::bigint AS message_id
  FROM outbox WHERE dedup_key = ANY(%s) AND sent_at IS NOT NULL AND delivery ? 'message_id';

-- outbox_progress_moved --
-- A progress message that could not be edited (deleted by the user, too old) was sent anew: the
-- order's later edits go to the new one.
UPDATE outbox SET delivery = coalesce(delivery, '{}'::jsonb) || jsonb_build_object('message_id', %s::bigint)
 WHERE dedup_key = %s AND sent_at IS NOT NULL;
