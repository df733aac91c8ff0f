"""A job's plans are checked for their form when they are written, not at every write of the job.

PostgreSQL reads a CHECK constraint's stored expression and plans it again for every statement
that writes its table, whatever columns the statement changes. `ck_jobs_plans_form` (0030) was
the largest the jobs table had (2.9 kB of node text), and it was read at every claim, renewal
and completion, though `plans` is written once, when the job is made. In a profile of a queue
drain the tables' checks were a tenth of the server's time (docs/decisions/0006).

A trigger on `INSERT OR UPDATE OF plans` holds every row to the same two forms, with the same
SQLSTATE (23514, check_violation) and the constraint's name; an update that does not name
`plans` does not fire it. Rows already stored were validated by 0030. No code level changes.

Revision ID: 0032
Revises: 0031
"""

import importlib.util
from pathlib import Path

from alembic import op

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None

code_levels = (13, 13)

_TRIGGER = r"""
CREATE FUNCTION videocopies_job_plans_form() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    -- Every plan (a list), or the seed and count they are drawn from.
    IF jsonb_typeof(NEW.plans) = 'array'
       OR (jsonb_typeof(NEW.plans) = 'object' AND jsonb_typeof(NEW.plans->'seed') = 'number'
           AND jsonb_typeof(NEW.plans->'copies') = 'number') THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'check_violation', CONSTRAINT = 'ck_jobs_plans_form', TABLE = 'jobs',
                          MESSAGE = 'the plans of job ' || NEW.job_id || ' are neither a list nor a seed and a count';
END
$fn$;
CREATE TRIGGER jobs_plans_form BEFORE INSERT OR UPDATE OF plans ON jobs FOR EACH ROW
    EXECUTE FUNCTION videocopies_job_plans_form();
"""


def _check_of_0030() -> str:
    """0030's constraint, as that revision froze it (added NOT VALID)."""
    path = Path(__file__).with_name("0030_jobs_keep_their_seed.py")
    spec = importlib.util.spec_from_file_location("_revision_0030", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text: str = module._CHECK
    return text


def upgrade() -> None:
    op.execute(_TRIGGER)
    op.execute("ALTER TABLE jobs DROP CONSTRAINT ck_jobs_plans_form")


def downgrade() -> None:
    op.execute(_check_of_0030())
    op.execute("ALTER TABLE jobs VALIDATE CONSTRAINT ck_jobs_plans_form")
    op.execute("DROP TRIGGER jobs_plans_form ON jobs")
    op.execute("DROP FUNCTION videocopies_job_plans_form()")
