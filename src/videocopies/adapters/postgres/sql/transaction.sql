-- begin --
-- A unit of work sends BEGIN itself, in the round trip of its first read.
BEGIN;

-- commit_without_flush --
-- A commit that does not wait for its WAL flush, for this transaction alone (a renewal:
-- fencing makes a lost one harmless).
SET LOCAL synchronous_commit TO off;

-- commit --
-- The end of a transaction sent in the same simple query as its statements (a renewal's:
-- renew_lease).
COMMIT;

-- apply_writes --
-- The whole write set of a unit of work as one call of videocopies_apply with its COMMIT: one
-- simple query, so it goes through PgBouncer, and the server runs statements whose plans it
-- keeps per session instead of parsing and planning each write. `{writes}` is the write set as
-- a JSON string literal, quoted by libpq. The write statements the function runs are the ones
-- named like its writes (insert_order, update_job_fenced, take_slot, ...); a fenced job write
-- that matches no row, or a capacity slot that cannot be taken, aborts it from inside, each
-- with its own SQLSTATE (migration 0023).
SELECT videocopies_apply({writes}::jsonb);
COMMIT;

-- apply_writes_joined --
-- The writes of a unit of work joined to an open one (an inbox turn's use case): sent without the
-- COMMIT, which the outer one sends, behind a savepoint so that a refused write (a fenced job, a
-- full house) undoes only them: rollback_joined returns there and the turn goes on.
SAVEPOINT joined;
SELECT videocopies_apply({writes}::jsonb);
RELEASE SAVEPOINT joined;

-- rollback_joined --
ROLLBACK TO SAVEPOINT joined;

-- savepoint_event --
-- An inbox turn handles each event behind a savepoint: an event that fails is undone alone, and
-- still marked done (with its error) when the turn commits.
SAVEPOINT inbox_event;

-- rollback_event --
ROLLBACK TO SAVEPOINT inbox_event;

-- load_reads --
-- The opening read of a unit of work as one call of videocopies_load (migration 0022): a
-- literal the server parses in a moment, while it keeps the plans of the locking reads inside
-- per session. `{reads}` is a JSON string literal, quoted by libpq.
SELECT videocopies_load({reads}::jsonb);
