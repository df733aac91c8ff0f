-- lock_duty --
-- The duty's lease, locked while the domain decides.
SELECT duty, holder, token, acquired_at, lease_until, term FROM duty_leases WHERE duty = %s FOR UPDATE;

-- update_duty --
UPDATE duty_leases SET holder = %(holder)s, token = %(token)s, acquired_at = %(acquired_at)s,
                       lease_until = %(lease_until)s, term = %(term)s
 WHERE duty = %(duty)s;

-- insert_duty --
-- The first lease of a duty; another node may make it first (then no row).
INSERT INTO duty_leases (duty, holder, token, acquired_at, lease_until, term)
 VALUES (%(duty)s, %(holder)s, %(token)s, %(acquired_at)s, %(lease_until)s, %(term)s)
 ON CONFLICT (duty) DO NOTHING;
