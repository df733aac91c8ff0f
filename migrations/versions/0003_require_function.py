"""A guard for batched writes: abort the transaction when a checked write changed no row.

Revision ID: 0003
Revises: 0002
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

code_levels = (1, 1)


def upgrade() -> None:
    # Writes travel with their COMMIT in one round trip; a fenced or version-checked update
    # that matched nothing must stop that COMMIT, so the check runs inside the database.
    op.execute(
        """
        CREATE FUNCTION videocopies_require(changed_rows bigint, expected_rows bigint, what text) RETURNS void
        LANGUAGE plpgsql AS $$
        BEGIN
            IF changed_rows IS DISTINCT FROM expected_rows THEN
                RAISE EXCEPTION USING ERRCODE = 'VC001', MESSAGE = what;
            END IF;
        END
        $$
        """
    )


def downgrade() -> None:
    op.execute("DROP FUNCTION videocopies_require(bigint, bigint, text)")
