-- insert_node --
INSERT INTO nodes (node_id, name, role, scopes, secret_sha256, created_at, revoked_at)
 VALUES (%s, %s, %s, %s, %s, %s, %s);

-- announce_nodes --
-- Every core reloads its copy of the nodes at once; rare writes (an operator's command), so the
-- NOTIFY lock they take costs nothing. The argument is a word for the log: added or revoked.
SELECT pg_notify(%s, %s);

-- revoke_node --
UPDATE nodes SET revoked_at = %s WHERE name = %s AND revoked_at IS NULL;

-- get_node --
SELECT node_id, name, role, scopes, secret_sha256, created_at, revoked_at FROM nodes WHERE node_id = %s;

-- live_nodes --
SELECT node_id, name, role, scopes, secret_sha256, created_at, revoked_at FROM nodes WHERE revoked_at IS NULL;

-- all_nodes --
-- Every node with its last contact, for operators.
SELECT node_id, name, role, scopes, secret_sha256, created_at, revoked_at, last_seen_at
 FROM nodes ORDER BY created_at;

-- nodes_seen --
UPDATE nodes SET last_seen_at = GREATEST(last_seen_at, v.at)
 FROM unnest(%s::text[], %s::timestamptz[]) AS v(node_id, at)
 WHERE nodes.node_id = v.node_id;
