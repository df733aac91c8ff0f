-- has_schema_migrations --
SELECT to_regclass('schema_migrations') IS NOT NULL;

-- record_migration --
-- Alembic's hook keeps the checksum of every applied migration (named parameters: SQLAlchemy).
INSERT INTO schema_migrations (revision, checksum, applied_at) VALUES (:r, :c, :t)
    ON CONFLICT (revision) DO UPDATE SET checksum = excluded.checksum, applied_at = excluded.applied_at;

-- forget_migration --
DELETE FROM schema_migrations WHERE revision = :r;

-- set_code_levels --
-- The code levels the schema accepts, as the newest applied migration states them.
INSERT INTO schema_compat (id, min_code_level, max_code_level, updated_at) VALUES (1, :lo, :hi, :t)
    ON CONFLICT (id) DO UPDATE SET min_code_level = :lo, max_code_level = :hi, updated_at = :t;

-- has_schema --
SELECT to_regclass('schema_compat') IS NOT NULL;

-- has_table --
SELECT to_regclass(%s) IS NOT NULL;

-- create_database --
-- `{}` is the database's name, quoted as an identifier.
CREATE DATABASE {};

-- add_capacity_slots --
INSERT INTO capacity_slots (slot_id) SELECT generate_series(1, %s) ON CONFLICT DO NOTHING;

-- remove_free_slots_above --
-- Free slots above the new capacity go; taken ones stay until their order closes.
DELETE FROM capacity_slots WHERE slot_id > %s AND order_id IS NULL;

-- count_capacity_slots --
SELECT count(*) FROM capacity_slots;

-- code_levels --
SELECT min_code_level, max_code_level FROM schema_compat WHERE id = 1;

-- applied_migrations --
SELECT revision, checksum FROM schema_migrations ORDER BY revision;

-- alembic_revision --
SELECT version_num FROM alembic_version;
