-- load_job_for_order --
SELECT j.*, (SELECT s.version FROM jobs s WHERE s.job_id = j.job_id) AS seen_version,
       (SELECT coalesce(json_agg(c ORDER BY c.idx), '[]') FROM job_checkpoints c
         WHERE c.job_id = j.job_id) AS checkpoints
  FROM jobs j WHERE j.order_id = %(order_id)s FOR UPDATE OF j;

-- expired_leases --
-- The sweep: leases that ran out, soonest first, skipping rows a claimer already holds.
SELECT job_id FROM jobs WHERE state = 'leased' AND lease_until <= %(now)s
 ORDER BY lease_until LIMIT %(limit)s FOR UPDATE SKIP LOCKED;

-- insert_job --
-- Run at commit inside videocopies_apply (migration 0023), as written here.
INSERT INTO jobs (job_id, order_id, state, plans, max_attempts, attempts, cancel_requested, worker_id,
                  owner_token, acquired_at, lease_until, last_error, created_at, version, closed_by,
                  source_bytes)
VALUES (%(job_id)s, %(order_id)s, %(state)s, %(plans)s, %(max_attempts)s, %(attempts)s,
        %(cancel_requested)s, %(worker_id)s, %(owner_token)s, %(acquired_at)s, %(lease_until)s,
        %(last_error)s, %(created_at)s, %(version)s, %(closed_by)s, %(source_bytes)s);

-- update_job --
-- Run at commit inside videocopies_apply (migration 0023), as written here.
UPDATE jobs SET state = %(state)s, attempts = %(attempts)s, cancel_requested = %(cancel_requested)s,
                worker_id = %(worker_id)s, owner_token = %(owner_token)s, acquired_at = %(acquired_at)s,
                lease_until = %(lease_until)s, last_error = %(last_error)s, version = %(version)s,
                closed_by = %(closed_by)s
 WHERE job_id = %(job_id)s AND version = %(loaded)s;

-- update_job_fenced --
-- A lease holder's write: applied only under its own token and while its lease runs.
-- No row changed: the commit is refused with SQLSTATE VCL01 (the lease is lost).
-- Run at commit inside videocopies_apply (migration 0023), as written here.
UPDATE jobs SET state = %(state)s, attempts = %(attempts)s, cancel_requested = %(cancel_requested)s,
                worker_id = %(worker_id)s, owner_token = %(owner_token)s, acquired_at = %(acquired_at)s,
                lease_until = %(lease_until)s, last_error = %(last_error)s, version = %(version)s,
                closed_by = %(closed_by)s
 WHERE job_id = %(job_id)s AND version = %(loaded)s
   AND owner_token = %(fence)s AND lease_until > now();

-- renew_lease --
-- A live lease extended in one round trip (RenewLease): only under its own token, presented by the
-- worker it was issued to (when the caller names one), and while the lease runs by the caller's clock
-- and by the database's, as the domain and update_job_fenced check it.
-- No row: not held so, nothing changed; the caller loads the job to learn why. Sent with BEGIN, SET
-- LOCAL synchronous_commit TO off (a lost renewal is only renewed again) and COMMIT.
UPDATE jobs SET lease_until = %(until)s, version = version + 1
 WHERE job_id = %(job_id)s AND state = 'leased' AND owner_token = %(token)s
   AND (%(holder)s::text IS NULL OR worker_id = %(holder)s)
   AND lease_until > %(now)s AND lease_until > now()
RETURNING cancel_requested;

-- insert_checkpoint --
-- Run at commit inside videocopies_apply (migration 0023), as written here.
INSERT INTO job_checkpoints (job_id, idx, object_key, size, sha256, duration_s, width, height, created_at,
                             quality, failure)
VALUES (%(job_id)s, %(idx)s, %(object_key)s, %(size)s, %(sha256)s, %(duration_s)s, %(width)s,
        %(height)s, %(created_at)s, %(quality)s, %(failure)s);

-- insert_receipt --
-- Run at commit inside videocopies_apply (migration 0023), as written here.
INSERT INTO receipts (receipt_id, fingerprint, result, created_at)
VALUES (%(receipt_id)s, %(fingerprint)s, %(result)s, now());

-- insert_refused_write --
-- Run at commit inside videocopies_apply (migration 0023), as written here.
INSERT INTO refused_writes (job_id, worker_id, operation, reason, at)
VALUES (%(job_id)s, %(worker_id)s, %(operation)s, %(reason)s, %(at)s);

-- count_refused_writes --
SELECT count(*) FROM refused_writes;
-- count_active_leases --
-- Leases held now, for /_info (blue/green waits for them to move).
SELECT count(*) FROM jobs WHERE state = 'leased' AND lease_until > now();

-- leases_at_switch --
-- Every lease active when a blue/green deploy switches cores.
SELECT job_id, owner_token, lease_until FROM jobs WHERE state = 'leased' AND lease_until > now();

-- leases_since_switch --
-- Each lease active at the switch: renewed since (same owner, later expiry), closed or given
-- back by its worker, or still waiting for its holder to ask the new core.
SELECT count(*) FILTER (WHERE j.state = 'leased' AND j.owner_token = s.token AND j.lease_until > s.until),
       count(*) FILTER (WHERE j.state <> 'leased' OR j.owner_token IS DISTINCT FROM s.token),
       count(*) FILTER (WHERE j.state = 'leased' AND j.owner_token = s.token AND j.lease_until = s.until)
  FROM jobs j JOIN unnest(%s::text[], %s::text[], %s::timestamptz[]) AS s(job_id, token, until)
    ON j.job_id = s.job_id;
