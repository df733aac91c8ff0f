-- announce --
-- A wake-up, sent after the change committed from a connection of its own: a NOTIFY inside the
-- writing transaction would make every such commit on the server queue on one lock.
SELECT pg_notify(%s, '');

-- listen --
-- On one direct connection, never through PgBouncer: in transaction mode a LISTEN lands on a shared
-- server session and notices go nowhere. `{}` is the channel, quoted as an identifier.
LISTEN {};
