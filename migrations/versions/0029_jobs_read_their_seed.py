"""Code of level 13 reads a job whose plans are stored as the seed they are drawn from.

A confirmation used to draw every copy's plan and store them all in `jobs.plans`: five plans
are about 1.8 kB of JSON a job, and the drawing was a fifth of a confirmation's Python. The
plans are a pure function of the order's seed and the number of copies (`plan_copies`), so a
job may store `{"seed": …, "copies": …}` instead, and the plans are drawn when a claim hands
the copies out.

This revision changes no table. It opens the window to code of level 13, which reads both forms
and writes the list, as level 12 does, while the schema still admits level 12. Revision 0030
closes the window to level 12; from then on level 13 stores the seed. Upgrade to this revision
first (`videocopies db upgrade --to 0029`), replace every core, then upgrade to the head.

Revision ID: 0029
Revises: 0028
"""

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

code_levels = (12, 13)


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
