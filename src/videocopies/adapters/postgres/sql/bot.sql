-- add_to_inbox --
-- A batch of updates stored, and their users marked waiting, in one statement sent without BEGIN
-- and COMMIT: edge asks for Telegram's next page only once this returns, so every round trip here
-- is a wait in the path of each update of a burst. Batches travel as one JSON document (json.dumps
-- runs in C) rather than as arrays, which psycopg builds element by element in Python, escaping
-- every string: in a burst of /start that was a sixth of core's CPU. An update id seen before is
-- skipped. The user is marked waiting with DO UPDATE, not DO NOTHING: it waits for an inbox turn
-- that holds this user right now (claim_inbox_users) to end, so the user is never forgotten with an
-- event still waiting. Rows are locked in user id order; a turn takes them with SKIP LOCKED and
-- never waits for one, so the two never deadlock.
WITH added AS (
    INSERT INTO inbox (update_id, user_id, kind, payload, received_at)
    SELECT e.update_id, e.user_id, e.kind, e.payload, %(now)s::timestamptz
      FROM jsonb_to_recordset(%(events)s::jsonb) AS e(update_id bigint, user_id bigint, kind text, payload jsonb)
    ON CONFLICT (update_id) DO NOTHING
    RETURNING user_id
), waiting AS (
    INSERT INTO inbox_users (user_id, since)
    SELECT DISTINCT user_id, %(now)s::timestamptz FROM added ORDER BY 1
    ON CONFLICT (user_id) DO UPDATE SET since = inbox_users.since
)
SELECT count(*) FROM added;

-- claim_inbox_users --
-- Waiting users taken by an inbox turn: their rows stay locked until its transaction ends, which
-- handles their events, so others skip them, and a processor that dies lets them go with its
-- connection. Two kinds in one statement: users with only text waiting (a burst of /start, handled
-- together in a few statements) up to `limit`, and the others (buttons, videos, payments, each a
-- use case) up to `others`, oldest first, `only` these users when given. A user whose next event is
-- a video edge is still fetching waits for it (edge completes the event, which frees the user),
-- unless it has waited past the fetch timeout: then it is handled as a file that never came. A user
-- held by a lease (claimed_until: a payment handled outside any transaction, see hold_inbox_users)
-- is skipped, except by the turn that names it. The events are read by the next
-- statement, whose snapshot comes after the locks: a turn that just ended is seen as done.
WITH texts AS (
    SELECT u.user_id FROM inbox_users u
     WHERE (u.claimed_until IS NULL OR u.claimed_until <= %(now)s OR %(only)s::bigint[] IS NOT NULL)
       AND (%(only)s::bigint[] IS NULL OR u.user_id = ANY(%(only)s::bigint[]))
       AND NOT EXISTS (SELECT 1 FROM inbox i WHERE i.user_id = u.user_id AND i.processed_at IS NULL
                          AND i.kind <> 'text')
     ORDER BY u.since LIMIT %(limit)s FOR UPDATE OF u SKIP LOCKED
), others AS (
    SELECT u.user_id FROM inbox_users u
     WHERE (u.claimed_until IS NULL OR u.claimed_until <= %(now)s OR %(only)s::bigint[] IS NOT NULL)
       AND (%(only)s::bigint[] IS NULL OR u.user_id = ANY(%(only)s::bigint[]))
       AND EXISTS (SELECT 1 FROM inbox i WHERE i.user_id = u.user_id AND i.processed_at IS NULL
                      AND i.kind <> 'text')
       AND NOT COALESCE((SELECT (i.payload->'video'->>'fetching')::boolean AND i.received_at > %(fetch_deadline)s
                           FROM inbox i WHERE i.user_id = u.user_id AND i.processed_at IS NULL
                          ORDER BY i.id LIMIT 1), false)
     ORDER BY u.since LIMIT %(others)s FOR UPDATE OF u SKIP LOCKED
)
SELECT user_id FROM texts UNION ALL SELECT user_id FROM others;

-- pending_inbox_events --
-- The unhandled events of these users, in arrival order.
SELECT id, update_id, kind, payload, received_at FROM inbox WHERE user_id = ANY(%s) AND processed_at IS NULL
 ORDER BY id;

-- complete_video --
-- The file came (or never will): the event takes edge's word, and its user is free at once.
WITH completed AS (
    UPDATE inbox SET payload = jsonb_set(payload, '{video}', %(video)s::jsonb)
     WHERE update_id = %(update_id)s AND user_id = %(user_id)s AND kind = 'video' AND processed_at IS NULL
       AND (payload->'video'->>'fetching')::boolean
    RETURNING user_id
), waiting AS (
    INSERT INTO inbox_users (user_id, since)
    SELECT user_id, now() FROM completed
    ON CONFLICT (user_id) DO NOTHING
)
SELECT count(*) FROM completed;

-- fetching_videos --
-- Video events whose file edge is still fetching.
SELECT id, update_id, kind, payload, received_at FROM inbox
 WHERE processed_at IS NULL AND kind = 'video' AND (payload->'video'->>'fetching')::boolean
 ORDER BY id LIMIT %s;

-- waiting_for_file --
-- The one video event edge may put a source for: stored by it, still waiting for its file.
SELECT 1 FROM inbox
 WHERE update_id = %(update_id)s AND user_id = %(user_id)s AND kind = 'video' AND processed_at IS NULL
   AND (payload->'video'->>'fetching')::boolean;

-- mark_inbox_done --
-- A batch of events handled. `= ANY` lets the planner find a batch's rows by primary key once the
-- table has statistics (EXPLAIN, 200 of 10,000 rows: 1.0 ms against 2.4 ms when joined to the
-- JSON alone, which hashed the whole table). A table never analyzed is scanned either way. A user
-- who writes again can be reached again: handling an event they sent since they were found
-- blocked clears `blocked_at` (through the partial index of blocked users, so it costs nothing
-- while nobody is blocked). An event from before the block says nothing new.
WITH reachable AS (
    UPDATE bot_users b SET blocked_at = NULL
     WHERE b.blocked_at IS NOT NULL AND b.user_id = ANY(%(users)s::bigint[])
       AND EXISTS (SELECT 1 FROM inbox i WHERE i.id = ANY(%(ids)s::bigint[]) AND i.user_id = b.user_id
                      AND i.received_at >= b.blocked_at)
)
UPDATE inbox SET processed_at = now(), outcome = d.outcome
  FROM jsonb_to_recordset(%(done)s::jsonb) AS d(id bigint, outcome text)
 WHERE inbox.id = d.id AND inbox.id = ANY(%(ids)s::bigint[]);

-- keep_unreadable --
-- An unreadable update whose user is unknown is kept as handled: there is nobody to answer.
INSERT INTO inbox (update_id, user_id, kind, payload, received_at, processed_at, outcome)
SELECT u.update_id, 0, 'unreadable', jsonb_build_object('reason', u.reason), %(now)s::timestamptz,
       %(now)s::timestamptz, 'unreadable'
  FROM jsonb_to_recordset(%(updates)s::jsonb) AS u(update_id bigint, reason text)
ON CONFLICT (update_id) DO NOTHING;

-- remember_bot_users --
-- Users as Telegram last described them; says which are new.
INSERT INTO bot_users (user_id, language, first_name, created_at)
SELECT u.user_id, u.language, u.first_name, %s::timestamptz
  FROM jsonb_to_recordset(%s::jsonb) AS u(user_id bigint, language text, first_name text)
ON CONFLICT (user_id) DO UPDATE SET language = EXCLUDED.language, first_name = EXCLUDED.first_name
RETURNING user_id, (xmax = 0) AS inserted;

-- forget_idle_inbox_users --
-- Claimed users with nothing left to handle stop waiting, at the end of their turn (a statement
-- of its own, so that it sees the events the turn marked done). Their rows are locked since the
-- claim; edge storing an event for one of them waits on that lock (add_to_inbox's DO UPDATE), so
-- a user is never forgotten with an event still waiting.
DELETE FROM inbox_users u WHERE u.user_id = ANY(%s)
   AND NOT EXISTS (SELECT 1 FROM inbox i WHERE i.user_id = u.user_id AND i.processed_at IS NULL);

-- hold_inbox_users --
-- Users whose next event is a payment, kept from other turns until then: the payment waits on the
-- provider, which it does outside any transaction; the turn that names them (claim_inbox_users'
-- `only`) takes them back and frees them (free_inbox_users).
UPDATE inbox_users SET claimed_until = %(until)s WHERE user_id = ANY(%(users)s::bigint[]);

-- free_inbox_users --
UPDATE inbox_users SET claimed_until = NULL WHERE user_id = ANY(%s::bigint[]) AND claimed_until IS NOT NULL;

-- inbox_backlog --
-- Users waiting to be handled (for metrics).
SELECT count(*) FROM inbox_users;

-- remember_bot_user --
-- One user as Telegram last described them; says whether they are new.
INSERT INTO bot_users (user_id, language, first_name, created_at)
 VALUES (%s, %s, %s, %s) ON CONFLICT (user_id)
 DO UPDATE SET language = EXCLUDED.language,
 first_name = EXCLUDED.first_name
 RETURNING (xmax = 0) AS inserted;

-- set_user_source --
-- The video a user sent last, waiting for their order.
UPDATE bot_users SET source = %s WHERE user_id = %s;

-- user_source --
-- A user's waiting video, and whether it is kept: a source is kept while its row says stored and
-- no deletion was decided for it; a row that is missing was forgotten after its deletion.
SELECT u.source, coalesce(s.state = 'stored' AND s.deleted_at IS NULL, false) AS kept
  FROM bot_users u LEFT JOIN stored_objects s ON s.key = u.source->>'source_key' AND s.kind = 'source'
 WHERE u.user_id = %s;

-- kept_source --
-- The size of a video this user sent (any of them, not only the last), while the store keeps it.
SELECT size FROM stored_objects
 WHERE key = %s AND user_id = %s AND kind = 'source' AND state = 'stored' AND deleted_at IS NULL;

-- kept_copy --
-- A copy the store still keeps: retention has not deleted it, nor decided to.
SELECT 1 FROM stored_objects WHERE key = %s AND kind = 'copy' AND state <> 'deleted' AND deleted_at IS NULL;

-- user_language --
-- The language the user chose with /language, else their Telegram's.
SELECT coalesce(chosen_language, language) AS language FROM bot_users WHERE user_id = %s;

-- user_languages --
SELECT user_id, coalesce(chosen_language, language) FROM bot_users WHERE user_id = ANY(%s);

-- choose_user_language --
-- The language the user chose with /language; their Telegram's stays in `language`.
UPDATE bot_users SET chosen_language = %s WHERE user_id = %s;

-- user_open_orders --
-- The user's orders that may still render or deliver (confirmed or running).
SELECT order_id FROM orders WHERE user_id = %s AND state IN ('confirmed', 'running') ORDER BY created_at;

-- block_user --
-- Telegram will not deliver to this user: remembered until they write again.
INSERT INTO bot_users (user_id, language, created_at, blocked_at)
 VALUES (%s, 'en', %s, %s) ON CONFLICT (user_id)
 DO UPDATE SET blocked_at = EXCLUDED.blocked_at;

-- blocked_users --
SELECT user_id FROM bot_users WHERE blocked_at IS NOT NULL AND user_id = ANY(%s);

-- user_orders_since --
SELECT count(*) FROM orders WHERE user_id = %s AND state <> 'quoted' AND created_at >= %s;

-- user_history --
SELECT * FROM orders WHERE user_id = %s AND state <> 'quoted' ORDER BY created_at DESC LIMIT %s;
