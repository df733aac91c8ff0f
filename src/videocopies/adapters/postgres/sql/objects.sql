-- release_copies --
-- Copies of closed orders are released.
UPDATE stored_objects s SET released_at = %(now)s FROM orders o
 WHERE s.state <> 'deleted' AND s.released_at IS NULL AND s.kind = 'copy'
   AND o.order_id = s.order_id AND o.state IN ('done', 'cancelled', 'failed');

-- source_in_use --
-- A source is in use while an order or a live quote of its user names it. Orders are found
-- through (user_id, created_at), from a little before the source's row: the row's time is the
-- database's and the order's the core's clock.
EXISTS (SELECT 1 FROM orders o
         WHERE o.user_id = s.user_id AND o.created_at >= s.stored_at - interval '1 hour'
           AND o.source_key = s.key
           AND (o.state IN ('confirmed', 'running', 'cancelling')
                OR (o.state = 'quoted' AND o.quote_expires_at > %(now)s)));

-- release_sources --
-- Sources no order uses are released ({in_use} is source_in_use).
UPDATE stored_objects s SET released_at = %(now)s
 WHERE s.state <> 'deleted' AND s.released_at IS NULL AND s.kind = 'source' AND NOT {in_use};

-- keep_sources --
-- A released source an order or a live quote uses again is kept ({in_use} is source_in_use).
UPDATE stored_objects s SET released_at = NULL
 WHERE s.state = 'stored' AND s.released_at IS NOT NULL AND s.deleted_at IS NULL AND s.kind = 'source'
   AND {in_use};

-- due_sources --
SELECT key, kind, state, stored_at, size, sha256, order_id, delivered_at, released_at, deleted_at
  FROM stored_objects
 WHERE state = 'stored' AND released_at <= %(before)s AND kind = 'source'
 ORDER BY released_at LIMIT %(limit)s;

-- due_copies --
(SELECT key, kind, state, stored_at, size, sha256, order_id, delivered_at, released_at, deleted_at FROM stored_objects
  WHERE state = 'delivered' AND delivered_at <= %(before)s AND kind = 'copy' ORDER BY delivered_at LIMIT %(limit)s)
UNION ALL
(SELECT key, kind, state, stored_at, size, sha256, order_id, delivered_at, released_at, deleted_at FROM stored_objects
  WHERE state = 'stored' AND released_at <= %(before)s AND kind = 'copy' ORDER BY released_at LIMIT %(limit)s)
LIMIT %(limit)s;

-- lock_objects --
-- The decision to delete, under the rows' locks: the source's row, which a quote locks too, and its
-- quotes' rows, which a confirmation locks (migration 0021); lock_objects, lock_object_quotes and
-- begin_deleting run in that order in one transaction. Either the quote or confirmation came
-- first and the source is in use (checked by a statement that starts after the locks were had, so
-- it sees that order), or it comes after and is refused.
SELECT key FROM stored_objects WHERE key = ANY(%(keys)s) ORDER BY key FOR UPDATE;

-- lock_object_quotes --
SELECT 1 FROM stored_objects s JOIN orders o
    ON o.user_id = s.user_id AND o.created_at >= s.stored_at - interval '1 hour' AND o.source_key = s.key
 WHERE s.key = ANY(%(keys)s) AND s.kind = 'source' AND o.state = 'quoted'
 ORDER BY o.order_id
   FOR SHARE OF o;

-- begin_deleting --
-- `deleted_at` on a row still stored: the store's delete is under way (or failed, and the next
-- pass tries again).
UPDATE stored_objects s SET deleted_at = coalesce(s.deleted_at, %(now)s)
 WHERE s.key = ANY(%(keys)s) AND s.state <> 'deleted'
   AND (s.deleted_at IS NOT NULL
        OR (s.kind = 'copy' AND s.state = 'delivered' AND s.delivered_at <= %(before)s)
        OR (s.kind = 'copy' AND s.state = 'stored' AND s.released_at <= %(before)s)
        OR (s.kind = 'source' AND s.state = 'stored' AND s.released_at <= %(before)s AND NOT 
EXISTS (SELECT 1 FROM orders o
         WHERE o.user_id = s.user_id AND o.created_at >= s.stored_at - interval '1 hour'
           AND o.source_key = s.key
           AND (o.state IN ('confirmed', 'running', 'cancelling')
                OR (o.state = 'quoted' AND o.quote_expires_at > %(now)s)))
))
RETURNING s.key;

-- mark_deleted --
UPDATE stored_objects SET state = 'deleted', deleted_at = %(now)s
 WHERE key = ANY(%(keys)s) AND state <> 'deleted';

-- look_up_objects --
-- A row may still come for a copy while its order's job is open (an upload before its checkpoint)
-- and for a source while its inbox event is unhandled (edge is fetching it).
WITH listed AS (SELECT unnest(%(keys)s::text[]) AS key)
SELECT l.key, s.state,
       CASE WHEN l.key LIKE 'copies/%%' THEN EXISTS (
                SELECT 1 FROM jobs j WHERE j.order_id = split_part(l.key, '/', 2) AND j.state IN ('queued', 'leased'))
            WHEN l.key ~ '^sources/[0-9]+/[0-9]+\.mp4$' THEN EXISTS (
                SELECT 1 FROM inbox i WHERE i.update_id = split_part(split_part(l.key, '/', 3), '.', 1)::bigint
                   AND i.processed_at IS NULL)
            ELSE false END AS awaited
  FROM listed l LEFT JOIN stored_objects s USING (key);

-- forget_deleted --
DELETE FROM stored_objects WHERE key IN (
    SELECT key FROM stored_objects WHERE state = 'deleted' AND deleted_at <= %(before)s LIMIT %(limit)s);

-- get_object --
SELECT key, kind, state, stored_at, size, sha256, order_id, delivered_at, released_at, deleted_at
 FROM stored_objects WHERE key = %(key)s;

-- object_figures --
SELECT kind, state, count(*) AS objects, coalesce(sum(size), 0) AS bytes
 FROM stored_objects GROUP BY kind, state;
