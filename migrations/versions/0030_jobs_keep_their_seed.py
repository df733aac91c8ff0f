"""New jobs store their plans as the seed they are drawn from; code of level 12 no longer runs.

Level 12 reads `jobs.plans` only as a list of every plan, so this revision admits level 13
alone, and level 13 stores `{"seed": …, "copies": …}` for a job it makes from then on (the
schema's window tells it: `SchemaStatus.jobs_keep_seed`). Jobs stored before keep their lists.

The check holds every row to one of the two forms, so a job whose plans nobody can read is
refused when it is written, not when a worker claims it. It is added NOT VALID and validated
apart: the scan of the jobs already stored then blocks no write.

Revision ID: 0030
Revises: 0029
"""

from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

code_levels = (13, 13)

_CHECK = """
ALTER TABLE jobs ADD CONSTRAINT ck_jobs_plans_form CHECK (
    jsonb_typeof(plans) = 'array'
    OR (jsonb_typeof(plans) = 'object' AND jsonb_typeof(plans->'seed') = 'number'
        AND jsonb_typeof(plans->'copies') = 'number')
) NOT VALID
"""


def upgrade() -> None:
    op.execute(_CHECK)
    op.execute("ALTER TABLE jobs VALIDATE CONSTRAINT ck_jobs_plans_form")


_REFUSE_SEEDS = """
DO $$ BEGIN
    IF EXISTS (SELECT 1 FROM jobs WHERE jsonb_typeof(plans) = 'object') THEN
        RAISE EXCEPTION 'jobs store their plans as a seed, which code of level 12 cannot read';
    END IF;
END $$
"""


def downgrade() -> None:
    op.execute(_REFUSE_SEEDS)
    op.execute("ALTER TABLE jobs DROP CONSTRAINT ck_jobs_plans_form")
